package push_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/intranode/push"
)

// The host sizes push-reduce grids at two blocks of Block threads per SM;
// the kernel's launch bounds must promise exactly that.
func TestPushReduceLaunchBoundsMatchTheBlock(t *testing.T) {
	require.Contains(t, push.Module.Source, fmt.Sprintf("__launch_bounds__(%d, 2)", push.Block))
}
