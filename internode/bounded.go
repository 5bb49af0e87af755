package internode

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

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
