package internode

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// The first byte of a rank's vote in agree.
const (
	voteOK          = 0
	voteFailed      = 1
	voteUnsupported = 2 // failed, and its error wraps device.ErrNotSupported
)

// maxReason bounds the text of a failed vote (bootstrap.MaxBlob bounds the
// whole blob).
const maxReason = 4 << 10

// agree tells every rank how this rank's part of a collective step went
// (local is nil on success) and returns every rank's payload, by rank, when
// every rank succeeded. Otherwise every rank gets an error: its own, or, on a
// rank that succeeded, one naming the first rank that failed and why
// (wrapping device.ErrPeer, and device.ErrNotSupported when that rank's
// error did). So no rank goes on to a step its peers will not join.
func agree(ctx context.Context, comm bootstrap.Comm, local error, payload []byte) ([][]byte, error) {
	blob := []byte{voteOK}
	switch {
	case local != nil && errors.Is(local, device.ErrNotSupported):
		blob[0] = voteUnsupported
	case local != nil:
		blob[0] = voteFailed
	}
	if local != nil {
		reason := local.Error()
		if len(reason) > maxReason {
			reason = reason[:maxReason] + "..."
		}
		blob = append(blob, reason...)
	} else {
		blob = append(blob, payload...)
	}
	all, err := comm.AllGather(ctx, blob)
	if err != nil {
		return nil, errors.Join(local, fmt.Errorf("rank %d: agreeing with the other ranks: %w", comm.Rank(), err))
	}
	if local != nil {
		return nil, local
	}
	payloads := make([][]byte, len(all))
	for r, b := range all {
		if len(b) == 0 {
			return nil, &peerError{rank: r, reason: "sent an empty vote"}
		}
		if b[0] != voteOK {
			return nil, &peerError{rank: r, reason: string(b[1:]), unsupported: b[0] == voteUnsupported}
		}
		payloads[r] = b[1:]
	}
	return payloads, nil
}

// peerError is another rank's failure, as agree reports it.
type peerError struct {
	rank        int
	reason      string
	unsupported bool
}

func (e *peerError) Error() string { return fmt.Sprintf("rank %d failed: %s", e.rank, e.reason) }

// Is matches device.ErrPeer, and device.ErrNotSupported when the peer's own
// error did.
func (e *peerError) Is(target error) bool {
	return target == device.ErrPeer || (e.unsupported && target == device.ErrNotSupported)
}

// bounded runs fn on a goroutine of its own and returns its result, or an
// error wrapping device.ErrTimeout once ctx ends first. It bounds native
// calls that block until every peer has joined them (NCCL and NVSHMEM
// initialisation): a peer that failed before joining would otherwise hold
// this rank there for good. A result that arrives after ctx ended is handed
// to late (to release what it holds), on that goroutine.
func bounded[T any](ctx context.Context, what string, fn func() (T, error), late func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // finished at the same moment: keep it
			return r.v, r.err
		default:
		}
		go func() {
			r := <-done
			if late != nil {
				late(r.v, r.err)
			}
		}()
		var zero T
		return zero, fmt.Errorf("%s did not return in time (a peer may have failed before joining): %w: %w",
			what, device.ErrTimeout, ctx.Err())
	}
}
