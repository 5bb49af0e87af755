package ce

import (
	"errors"
	"slices"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// Point is a point the copy-engine scatter of one node peer's rows passes,
// which a traced call records: Ready after the wait for the peer's ready
// flag (first node step only), Early after the copy of the early rows (the
// first peer, with a split first block), Signal after the wait for the GEMM
// signal (with overlap), Permit after the wait for the peer's permit (with
// overlap, every peer but the first), Landed after the peer's last copy,
// its arrival signal and (with overlap) the permit it gives.
type Point int

// The points, in the order a peer's scatter passes them.
const (
	Ready Point = iota
	Early
	Signal
	Permit
	Landed
	numPoints
)

// PeerTimes is when the scatter of one node peer's rows passed each point
// in the last traced call (the last node step's), from the start event
// given to Traced; 0 for a point it did not pass.
type PeerTimes struct {
	LocalRank int
	At        [numPoints]time.Duration
}

// tracer holds the events of the traced calls: events[p][at] of node peer
// p's point at; passed[p][at] says the last call recorded it; order is the
// order the peers were first scattered to in the last call; reduceReady
// marks when the reduction stream passed the waits of the last step's last
// chunk (readySeen: the last call recorded it).
type tracer struct {
	events      [][numPoints]device.Event
	passed      [][numPoints]bool
	order       []int
	reduceReady device.Event
	readySeen   bool
}

// Trace turns the recording of the scatter's points on or off for later
// calls.
func (e *Engine) Trace(on bool) error {
	if !on {
		return e.closeTrace()
	}
	if e.trace != nil {
		return nil
	}
	t := &tracer{events: make([][numPoints]device.Event, e.lws()), passed: make([][numPoints]bool, e.lws())}
	e.trace = t
	var err error
	if t.reduceReady, err = e.env.Dev.NewTimedEvent(); err != nil {
		return errors.Join(err, e.closeTrace())
	}
	for p := range t.events {
		for at := range t.events[p] {
			ev, err := e.env.Dev.NewTimedEvent()
			if err != nil {
				return errors.Join(err, e.closeTrace())
			}
			t.events[p][at] = ev
		}
	}
	return nil
}

// BeginTrace forgets what the last traced call recorded; a call starts
// with it.
func (e *Engine) BeginTrace() {
	if t := e.trace; t != nil {
		clear(t.passed)
		t.order = t.order[:0]
		t.readySeen = false
	}
}

// record records point at of peer p on s, when tracing.
func (t *tracer) record(s device.Stream, p int, at Point) error {
	if t == nil {
		return nil
	}
	if !slices.Contains(t.order, p) {
		t.order = append(t.order, p)
	}
	t.passed[p][at] = true
	return t.events[p][at].Record(s)
}

// recordReady records on s, the reduction stream, that the waits before
// the last step's last reduce passed, when tracing.
func (t *tracer) recordReady(s device.Stream) error {
	if t == nil {
		return nil
	}
	t.readySeen = true
	return t.reduceReady.Record(s)
}

// ReduceReady returns when, in the last traced call, the reduction stream
// passed its waits for the last node step's last chunk (the peers' arrivals
// and, with GEMM overlap, the own block's signals), since start; 0 where it
// did not record it.
func (e *Engine) ReduceReady(start device.Event) (time.Duration, error) {
	t := e.trace
	if t == nil || !t.readySeen {
		return 0, nil
	}
	return t.reduceReady.Since(start)
}

// Traced returns the points the last traced call passed, peer by peer in
// the order scattered, as times since start (an event recorded at the
// call's start). The call must have completed.
func (e *Engine) Traced(start device.Event) ([]PeerTimes, error) {
	t := e.trace
	if t == nil {
		return nil, nil
	}
	var errs []error
	out := make([]PeerTimes, 0, len(t.order))
	for _, p := range t.order {
		pt := PeerTimes{LocalRank: p}
		for at := range pt.At {
			if t.passed[p][at] {
				d, err := t.events[p][at].Since(start)
				errs = append(errs, err)
				pt.At[at] = d
			}
		}
		out = append(out, pt)
	}
	return out, errors.Join(errs...)
}

func (e *Engine) closeTrace() error {
	t := e.trace
	if t == nil {
		return nil
	}
	e.trace = nil
	var errs []error
	if t.reduceReady != nil {
		errs = append(errs, t.reduceReady.Close())
	}
	for _, pts := range t.events {
		for _, e := range pts {
			if e != nil {
				errs = append(errs, e.Close())
			}
		}
	}
	return errors.Join(errs...)
}

// Close releases the engine's trace events and help event. The heap
// belongs to its owner.
func (e *Engine) Close() error {
	err := e.closeTrace()
	if e.helped != nil {
		err = errors.Join(err, e.helped.Close())
		e.helped = nil
	}
	return err
}
