package internode

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/launch"
	"github.com/seed12530e24/hiercoll/world"
)

// envRailChild tells a child process of TestRailOverProcesses which
// transport to exercise.
const envRailChild = "HIERCOLL_INTERNODE_CHILD"

// TestRailOverProcesses runs the rail exchange on the GPUs of this host, one
// process per GPU as in a real job (NVSHMEM runs one PE per process), over
// emulated nodes: the launcher gives each emulated node its own NCCL host id,
// so NCCL takes its network path between them, while NVSHMEM and IPC use
// NVLink. Each case re-runs this test binary as the children
// (TestRailChild).
func TestRailOverProcesses(t *testing.T) {
	if os.Getenv(envRailChild) != "" {
		t.Skip("this is a child process")
	}
	gpus := world.GPUs()
	if gpus < 2 {
		t.Skipf("needs 2 or more GPUs; the CUDA driver sees %d", gpus)
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	shapes := []bootstrap.Shape{{Nodes: 2, LocalSize: 1}}
	if gpus >= 4 {
		shapes = append(shapes, bootstrap.Shape{Nodes: 2, LocalSize: 2}, bootstrap.Shape{Nodes: 4, LocalSize: 1})
	}
	cases := []struct {
		kind  Kind
		stage bool // NVSHMEM: stage the puts as across hosts
	}{{NCCL, false}, {NVSHMEM, false}, {NVSHMEM, true}, {IPC, false}, {Auto, false}}
	for _, shape := range shapes {
		for _, c := range cases {
			name := fmt.Sprintf("%v/%v", c.kind, shape)
			if c.stage {
				name = fmt.Sprintf("%v-staged/%v", c.kind, shape)
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				stage := "0"
				if c.stage {
					stage = "1"
				}
				err := launch.Run(ctx, launch.Spec{
					NProc:   shape.World(),
					Nodes:   shape.Nodes,
					Command: []string{exe, "-test.run=^TestRailChild$", "-test.v", "-test.count=1"},
					Env:     []string{envRailChild + "=" + c.kind.String(), EnvNVSHMEMStage + "=" + stage},
				})
				require.NoError(t, err)
			})
		}
	}
}

// TestRailChild is one rank of a TestRailOverProcesses case.
func TestRailChild(t *testing.T) {
	name := os.Getenv(envRailChild)
	if name == "" {
		t.Skip("runs only as a child process of TestRailOverProcesses")
	}
	k, err := ParseKind(name)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := world.Process(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		// Twice, so that NVSHMEM is finalised and started again.
		for round := 0; round < 2; round++ {
			got, err := exchange(ctx, r, k, 7, 256<<10+4)
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			if k == Auto && got != IPC {
				return fmt.Errorf("auto picked %v on one host, want ipc", got)
			}
			t.Logf("rank %d (%s): round %d: %v exchange of 7 calls ok", r.Comm.Rank(), r.Dev.Name(), round, got)
		}
		return nil
	})
	require.NoError(t, err)
}
