package rs2d

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// A call that waits on the device for a rank that never made it fails with
// a timeout naming the word it waited on, which is raised by the next rank
// along, not necessarily by the one that stalled: on 2 × 2, rank 1 waits
// for its rail peer, rank 3, while rank 3 waits for rank 2, which never
// called. The CPU backend's timeout also names the waits stuck beside it
// (rank 3's for rank 2 among them); a GPU's stream synchronize that runs
// out names no word. Close, which every rank calls, finds the rank that
// stalled first:
// its barrier is an all-gather of how many calls each rank made, and a rank
// that made fewer than the others, or never came, is named with its node
// and local rank.

// StallError names the ranks that made fewer calls on a context than the
// others: every rank's call after their last waited for them.
type StallError struct {
	Shape bootstrap.Shape
	Calls []uint64 // by rank
}

func (e *StallError) Error() string {
	most := slices.Max(e.Calls)
	var behind []string
	for _, calls := range distinct(e.Calls) {
		if calls == most {
			continue
		}
		var ranks []string
		for r, c := range e.Calls {
			if c == calls {
				ranks = append(ranks, rankWhere(e.Shape, r))
			}
		}
		behind = append(behind, fmt.Sprintf("%s made %d call(s)", strings.Join(ranks, ", "), calls))
	}
	return fmt.Sprintf("rs2d: %s on this context, the others %d: calls after a rank's last waited for it (the first named stalled first)",
		strings.Join(behind, "; "), most)
}

// Is matches device.ErrPeer.
func (e *StallError) Is(target error) bool { return target == device.ErrPeer }

func distinct(xs []uint64) []uint64 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// rankWhere names a rank with its node and local rank.
func rankWhere(shape bootstrap.Shape, r int) string {
	return fmt.Sprintf("rank %d (node %d, local rank %d)", r, r/shape.LocalSize, r%shape.LocalSize)
}

// closeBarrier is Close's barrier: every rank tells how many calls it made,
// and the ranks that fell behind, or never came, are named.
func (c *Context) closeBarrier(ctx context.Context) error {
	all, err := c.comm.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, c.calls))
	if err != nil {
		var be *bootstrap.Error
		if errors.As(err, &be) && len(be.Ranks) > 0 {
			names := make([]string, len(be.Ranks))
			for i, r := range be.Ranks {
				names[i] = rankWhere(c.place.Shape, r)
			}
			return fmt.Errorf("rs2d: close: %s never came to Close (gone, or stuck before it): %w", strings.Join(names, ", "), err)
		}
		return fmt.Errorf("rs2d: close: %w", err)
	}
	calls := make([]uint64, len(all))
	for r, b := range all {
		if len(b) != 8 {
			return fmt.Errorf("rs2d: close: rank %d sent %d bytes for its call count: %w", r, len(b), device.ErrPeer)
		}
		calls[r] = binary.LittleEndian.Uint64(b)
	}
	if slices.Min(calls) == slices.Max(calls) {
		return nil
	}
	return &StallError{Shape: c.place.Shape, Calls: calls}
}
