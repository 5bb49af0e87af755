package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// Ranks that fail alike are reported once; different failures each with
// their ranks; errors.Is still sees every rank's error.
func TestRunReportsEachFailureOnce(t *testing.T) {
	w, err := Sim(bootstrap.Shape{Nodes: 2, LocalSize: 4}, SimOptions{})
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	ctx := context.Background()

	require.NoError(t, w.Run(ctx, func(context.Context, Rank) error { return nil }))

	err = w.Run(ctx, func(_ context.Context, r Rank) error {
		return fmt.Errorf("M=13 is not divisible by 8: %w", device.ErrInvalidArgument)
	})
	require.EqualError(t, err, "ranks 0-7: M=13 is not divisible by 8: invalid argument")
	require.ErrorIs(t, err, device.ErrInvalidArgument)

	err = w.Run(ctx, func(_ context.Context, r Rank) error {
		switch r.Comm.Rank() {
		case 0, 1, 2, 5:
			return errors.New("waited for rank 6")
		case 6:
			return fmt.Errorf("gone: %w", device.ErrPeer)
		}
		return nil
	})
	require.EqualError(t, err, "ranks 0-2, 5: waited for rank 6\nrank 6: gone: peer failed")
	require.ErrorIs(t, err, device.ErrPeer)
	var re *RankErrors
	require.ErrorAs(t, err, &re)
	require.Equal(t, []int{0, 1, 2, 5, 6}, re.Ranks)

	// Errors that name their own rank are one failure, in rank 0's words.
	err = w.Run(ctx, func(_ context.Context, r Rank) error {
		return fmt.Errorf("rank %d: sim:%d: all-gather: %w", r.Comm.Rank(), r.Comm.Rank(), context.DeadlineExceeded)
	})
	require.EqualError(t, err, "ranks 0-7: rank 0: sim:0: all-gather: context deadline exceeded (in rank 0's words; the others' differ only in numbers)")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
