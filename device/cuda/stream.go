package cuda

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// stream is a CUstream of a Device: one it created (owned) or one it wraps.
type stream struct {
	dev    *Device
	h      uintptr
	name   string
	owned  bool
	closed atomic.Bool
}

var _ device.Stream = (*stream)(nil)

func (s *stream) String() string { return s.name }

// WaitEvent implements device.Stream with cuStreamWaitEvent. The event may
// belong to another device: CUDA orders work across contexts this way.
func (s *stream) WaitEvent(e device.Event) error {
	st, err := s.dev.own(s)
	if err != nil {
		return err
	}
	ev, ok := e.(*event)
	if !ok || ev == nil {
		return fmt.Errorf("cuda: %s: event of another backend (%T): %w", s.name, e, device.ErrInvalidArgument)
	}
	if err := ev.open(); err != nil {
		return err
	}
	return s.dev.check(s.dev.drv.streamWaitEvent(s.dev.ctx, st.h, ev.h), "cuStreamWaitEvent(%s)", s.name)
}

// Synchronize implements device.Stream by polling cuStreamQuery (never
// cuStreamSynchronize, which a stuck wait-value would block forever). A
// failure of earlier work (a kernel fault, which CUDA makes sticky) is
// returned as the query's *Error.
func (s *stream) Synchronize(ctx context.Context) error {
	st, err := s.dev.own(s)
	if err != nil {
		return err
	}
	return waitDone(ctx, s.name, device.StreamSynchronize, func() (bool, error) {
		done, err := s.dev.queryStream(st.h)
		if err != nil {
			return false, fmt.Errorf("cuda: %s: %w", s.name, err)
		}
		return done, nil
	})
}

// Handle implements device.Stream: the CUstream.
func (s *stream) Handle() uintptr { return s.h }

// Close implements device.Stream. An owned stream is destroyed with
// cuStreamDestroy_v2, which returns at once; the driver releases the stream
// once its queued work has run. A wrapper only stops being usable.
func (s *stream) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if !s.owned {
		return nil
	}
	s.dev.streams.Add(-1)
	if s.dev.closed.Load() {
		return fmt.Errorf("cuda: %s: closed after its device: %w", s.name, device.ErrClosed)
	}
	return s.dev.check(s.dev.drv.streamDestroy(s.dev.ctx, s.h), "cuStreamDestroy_v2(%s)", s.name)
}

// event is a CUevent: timed (NewTimedEvent) or not (NewEvent).
type event struct {
	dev   *Device
	h     uintptr
	timed bool // made by NewTimedEvent

	mu     sync.Mutex
	closed bool
	on     string // the stream of the last Record, for messages
}

var _ device.Event = (*event)(nil)

func (e *event) open() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cuda: %s: event: %w", e.dev.name, device.ErrClosed)
	}
	return e.dev.live()
}

// Record implements device.Event with cuEventRecord on a stream of the same
// device.
func (e *event) Record(s device.Stream) error {
	st, err := e.dev.own(s)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cuda: %s: record on a closed event: %w", e.dev.name, device.ErrClosed)
	}
	if err := e.dev.check(e.dev.drv.eventRecord(e.dev.ctx, e.h, st.h), "cuEventRecord(%s)", st.name); err != nil {
		return err
	}
	e.on = st.name
	return nil
}

// query is cuEventQuery: done, pending, or the failure of the recorded work.
func (e *event) query() (bool, error) {
	switch r := e.dev.drv.eventQuery(e.dev.ctx, e.h); r {
	case cudaSuccess:
		return true, nil
	case cudaErrorNotReady:
		return false, nil
	default:
		return true, e.dev.check(r, "cuEventQuery(event recorded on %s)", e.recordedOn())
	}
}

func (e *event) recordedOn() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.on == "" {
		return e.dev.name + " (never recorded)"
	}
	return e.on
}

// Synchronize implements device.Event by polling cuEventQuery, bounded by
// ctx. An event never recorded is complete, as in CUDA.
func (e *event) Synchronize(ctx context.Context) error {
	if err := e.open(); err != nil {
		return err
	}
	return waitDone(ctx, e.recordedOn(), device.EventSynchronize, e.query)
}

// Done implements device.Event with cuEventQuery. A failure of the recorded
// work reports done with the error.
func (e *event) Done() (bool, error) {
	if err := e.open(); err != nil {
		return false, err
	}
	return e.query()
}

// Since implements device.Event with cuEventElapsedTime_v2 (or
// cuEventElapsedTime on drivers before 12.8): the time from earlier's point
// to this event's, both of which must have been reached.
func (e *event) Since(earlier device.Event) (time.Duration, error) {
	o, ok := earlier.(*event)
	if !ok || o == nil {
		return 0, fmt.Errorf("cuda: event of another backend (%T): %w", earlier, device.ErrInvalidArgument)
	}
	if !e.timed || !o.timed {
		return 0, fmt.Errorf("cuda: elapsed time between events not both made by NewTimedEvent: %w", device.ErrInvalidArgument)
	}
	if err := e.open(); err != nil {
		return 0, err
	}
	if err := o.open(); err != nil {
		return 0, err
	}
	ms, r := e.dev.drv.eventElapsedTime(e.dev.ctx, o.h, e.h)
	if r == cudaErrorNotReady {
		return 0, fmt.Errorf("cuda: elapsed time of an event not yet reached: %w", device.ErrInvalidArgument)
	}
	if err := e.dev.check(r, "%s", e.dev.drv.symbol("cuEventElapsedTime")); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close implements device.Event with cuEventDestroy_v2.
func (e *event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.dev.events.Add(-1)
	if e.dev.closed.Load() {
		return fmt.Errorf("cuda: %s: event closed after its device: %w", e.dev.name, device.ErrClosed)
	}
	return e.dev.check(e.dev.drv.eventDestroy(e.dev.ctx, e.h), "cuEventDestroy_v2")
}
