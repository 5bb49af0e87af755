package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// Host-side waits poll instead of blocking in the driver: a stream stuck in a
// wait-value that no rank will ever satisfy would block cuStreamSynchronize
// forever. The poll spins for a few microseconds (most waits end there), then
// sleeps with doubling intervals up to maxSleep.
const (
	spinFor    = 20 * time.Microsecond
	firstSleep = 10 * time.Microsecond
	maxSleep   = time.Millisecond
)

// waitDone polls query until it reports done or fails, bounded by ctx. On the
// ctx deadline it returns a *device.TimeoutError naming where and what
// waited; on cancellation the wrapped ctx error. query is asked once more
// after ctx ends, so work that completed right at the deadline is not
// reported as a timeout.
func waitDone(ctx context.Context, where, what string, query func() (bool, error)) error {
	start := time.Now()
	sleep := firstSleep
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		done, err := query()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return &device.TimeoutError{Stream: where, What: what, After: time.Since(start)}
			}
			return fmt.Errorf("cuda: %s: %s: %w", where, what, err)
		}
		if time.Since(start) < spinFor {
			runtime.Gosched()
			continue
		}
		if timer == nil {
			timer = time.NewTimer(sleep)
		} else {
			timer.Reset(sleep) // Go ≥ 1.23 timers: no stale tick to drain
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		if sleep *= 2; sleep > maxSleep {
			sleep = maxSleep
		}
	}
}
