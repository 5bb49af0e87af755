package ctest

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCABIEnviron runs testdata/environ.c: variables the C program sets or
// unsets after the library is loaded are what the library sees, and
// hc_init_store takes HIERCOLL_TIMEOUT.
func TestCABIEnviron(t *testing.T) {
	bin := compileC(t, "environ.c")
	for _, k := range []string{"HIERCOLL_SIM_MEMORY", "HIERCOLL_TIMEOUT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"} {
		if _, set := os.LookupEnv(k); set {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
	out, err := run(t, time.Minute, bin)
	require.NoError(t, err, "C environ program:\n%s", out)
	require.Contains(t, out, "environ ok")
	t.Log(strings.TrimSpace(out))

	t.Setenv("HIERCOLL_SIM_MEMORY", "4K") // in the environment the library is loaded with
	out, err = run(t, time.Minute, bin, "unset")
	require.NoError(t, err, "C environ program, unset:\n%s", out)
	require.Contains(t, out, "environ ok")
}
