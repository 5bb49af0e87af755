package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// op is one queued piece of stream work.
type op struct {
	run    func() error
	always bool // runs on a failed stream too (event markers)
}

// stream runs its queue in order on one goroutine. After an op fails, the
// stream keeps the error (sticky, as a CUDA context does after a fault):
// later ops are skipped, events recorded later carry the error, and
// Synchronize returns it.
type stream struct {
	dev   *Device
	name  string
	owned bool

	mu       sync.Mutex
	queue    []op
	wake     chan struct{} // capacity 1: queue became non-empty or closing
	enqueued uint64
	done     uint64
	progress chan struct{} // closed and replaced when done advances
	err      error
	closed   bool
	exited   chan struct{}
	capture  *capture // while captured (graph.go)
}

var _ device.Stream = (*stream)(nil)

func newStream(d *Device, name string) *stream {
	s := &stream{
		dev:      d,
		name:     name,
		owned:    true,
		wake:     make(chan struct{}, 1),
		progress: make(chan struct{}),
		exited:   make(chan struct{}),
	}
	live.streams.Add(1)
	go s.loop()
	return s
}

func (s *stream) String() string { return s.name }

func (s *stream) enqueue(o op) error {
	if s.captured(node{op: o}) {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("sim: %s: %w", s.name, device.ErrClosed)
	}
	s.queue = append(s.queue, o)
	s.enqueued++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *stream) loop() {
	defer close(s.exited)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			if s.closed {
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			<-s.wake
			continue
		}
		o := s.queue[0]
		s.queue[0] = op{}
		s.queue = s.queue[1:]
		failed := s.err
		s.mu.Unlock()

		var err error
		if failed == nil || o.always {
			err = o.run()
		}

		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.done++
		close(s.progress)
		s.progress = make(chan struct{})
		s.mu.Unlock()
	}
}

// failure returns the sticky error, if any.
func (s *stream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// WaitEvent implements device.Stream.
func (s *stream) WaitEvent(e device.Event) error {
	ev, ok := e.(*event)
	if !ok {
		return fmt.Errorf("sim: %s: event of another backend (%T): %w", s.name, e, device.ErrInvalidArgument)
	}
	if joined, err := s.awaitCaptured(ev); joined || err != nil {
		return err
	}
	rec := ev.last()
	if rec == nil {
		return nil // never recorded: nothing to wait for, as in CUDA
	}
	// The awaited work is itself bounded (every wait-value times out), so
	// this bound only guards against a simulator bug; it is long so that the
	// wait-value's own, more telling, timeout is the one reported.
	timeout := 4 * s.dev.opts.WaitTimeout
	return s.enqueue(op{run: func() error {
		select {
		case <-rec.done:
			if rec.err != nil {
				return fmt.Errorf("waiting on an event of %s: %w", rec.stream, rec.err)
			}
			return nil
		case <-time.After(timeout):
			return &device.TimeoutError{Stream: s.name, What: "wait on an event recorded on " + rec.stream, After: timeout}
		}
	}})
}

// awaitCaptured handles a wait for ev where either side is captured: a wait
// for an event recorded in a capture joins it (fork), and a captured stream
// may wait only for events recorded in its own capture. It reports whether
// the wait was captured.
func (s *stream) awaitCaptured(ev *event) (bool, error) {
	ev.mu.Lock()
	cr := ev.captured
	ev.mu.Unlock()
	s.mu.Lock()
	c := s.capture
	switch {
	case cr != nil && !cr.c.ended && c == nil:
		s.capture = cr.c
		cr.c.lanes = append(cr.c.lanes, &lane{s: s})
	case c != nil && (cr == nil || cr.c != c):
		s.mu.Unlock()
		return false, fmt.Errorf("sim: %s is being captured and cannot wait for an event recorded outside its capture: %w", s.name, device.ErrInvalidArgument)
	case cr == nil || cr.c.ended:
		s.mu.Unlock()
		return false, nil
	}
	s.mu.Unlock()
	return s.captured(node{await: cr.edge}), nil
}

// Synchronize implements device.Stream.
func (s *stream) Synchronize(ctx context.Context) error {
	s.mu.Lock()
	if s.capture != nil {
		s.mu.Unlock()
		return fmt.Errorf("sim: %s: synchronize while it is being captured: %w", s.name, device.ErrInvalidArgument)
	}
	target := s.enqueued
	s.mu.Unlock()
	start := time.Now()
	for {
		s.mu.Lock()
		done, err, progress := s.done, s.err, s.progress
		s.mu.Unlock()
		if done >= target {
			if err != nil {
				return fmt.Errorf("sim: %s: %w", s.name, err)
			}
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &device.TimeoutError{Stream: s.name, What: device.StreamSynchronize, After: time.Since(start)}
			}
			return fmt.Errorf("sim: %s: synchronize: %w", s.name, ctx.Err())
		}
	}
}

// Handle implements device.Stream; simulated streams have no native handle.
func (s *stream) Handle() uintptr { return 0 }

// Close implements device.Stream: the queue drains, then the goroutine ends.
func (s *stream) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	if s.owned {
		<-s.exited
		live.streams.Add(-1)
	}
	return nil
}

// record is one Record of an event: the point it marks.
type record struct {
	stream string
	done   chan struct{}
	err    error
	at     time.Time
}

type event struct {
	dev      *Device
	mu       sync.Mutex
	rec      *record
	captured *capturedRecord // the last record was captured (graph.go)
	closed   bool
	timed    bool // made by NewTimedEvent: Since works, as on CUDA
}

var _ device.Event = (*event)(nil)

func (e *event) last() *record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec
}

// Record implements device.Event.
func (e *event) Record(st device.Stream) error {
	s, ok := st.(*stream)
	if !ok {
		return fmt.Errorf("sim: record on a stream of another backend (%T): %w", st, device.ErrInvalidArgument)
	}
	rec := &record{stream: s.name, done: make(chan struct{})}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("sim: record on a closed event: %w", device.ErrClosed)
	}
	s.mu.Lock()
	c := s.capture
	var edge int
	if c != nil {
		c.edges++
		edge = c.edges
		e.captured = &capturedRecord{c: c, edge: edge}
	} else {
		e.rec, e.captured = rec, nil
	}
	s.mu.Unlock()
	e.mu.Unlock()
	if c != nil {
		s.captured(node{signal: edge, event: e})
		return nil
	}
	// The marker runs even on a failed stream, so waiters learn of the failure.
	return s.enqueue(op{always: true, run: func() error {
		rec.at = time.Now()
		rec.err = s.failure()
		close(rec.done)
		return nil
	}})
}

// Synchronize implements device.Event.
func (e *event) Synchronize(ctx context.Context) error {
	rec := e.last()
	if rec == nil {
		return nil
	}
	start := time.Now()
	select {
	case <-rec.done:
		return rec.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &device.TimeoutError{Stream: rec.stream, What: device.EventSynchronize, After: time.Since(start)}
		}
		return ctx.Err()
	}
}

// Done implements device.Event.
func (e *event) Done() (bool, error) {
	rec := e.last()
	if rec == nil {
		return true, nil
	}
	select {
	case <-rec.done:
		return true, rec.err
	default:
		return false, nil
	}
}

// Since implements device.Event.
func (e *event) Since(earlier device.Event) (time.Duration, error) {
	o, ok := earlier.(*event)
	if !ok {
		return 0, fmt.Errorf("sim: event of another backend (%T): %w", earlier, device.ErrInvalidArgument)
	}
	if !e.timed || !o.timed {
		return 0, fmt.Errorf("sim: elapsed time between events not both made by NewTimedEvent: %w", device.ErrInvalidArgument)
	}
	a, b := o.last(), e.last()
	if a == nil || b == nil {
		return 0, fmt.Errorf("sim: elapsed time of an event never recorded: %w", device.ErrInvalidArgument)
	}
	for _, r := range []*record{a, b} {
		select {
		case <-r.done:
		default:
			return 0, fmt.Errorf("sim: elapsed time of an event not yet reached: %w", device.ErrInvalidArgument)
		}
	}
	return b.at.Sub(a.at), nil
}

// Close implements device.Event.
func (e *event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		live.events.Add(-1)
	}
	return nil
}
