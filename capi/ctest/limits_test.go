package ctest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCABILimits runs testdata/limits.c: shapes whose byte size overflows,
// allocations past the simulated memory (HIERCOLL_SIM_MEMORY=64M) and copies
// at addresses far past an allocation, each a clear error from C.
func TestCABILimits(t *testing.T) {
	bin := compileC(t, "limits.c")
	t.Setenv("HIERCOLL_SIM_MEMORY", "64M")
	out, err := run(t, time.Minute, bin)
	require.NoError(t, err, "C limits program:\n%s", out)
	t.Log(strings.TrimSpace(out))
}
