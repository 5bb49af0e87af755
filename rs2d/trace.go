package rs2d

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
)

// Stages is when each stage of the last traced call finished, measured from
// the start of the call on the device (stages overlap, so these are end
// times, not durations).
type Stages struct {
	Scatter time.Duration // the last copy-engine copy landed
	// Peers follows each node peer's rows through the copy-engine scatter
	// (not the SM engine's), in the order they are scattered.
	Peers       []PeerStages
	IntraReduce time.Duration // the last intra-node reduce finished
	InterNode   time.Duration // the last rail send finished (0 on one node)
	Total       time.Duration // the final reduce finished: the whole call
}

// PeerStages is when the copy-engine scatter of one node peer's rows passed
// its points, from the start of the call: its ready flag (first node step
// only; 0 otherwise), the copy of its early rows (the first peer with
// SplitFirstBlock), its GEMM signal and its permit (with OverlapWithGEMM;
// the first peer needs no permit), and its last copy landing. With several
// node steps, the last step's. 0: not passed.
type PeerStages struct {
	LocalRank                            int
	Ready, Early, Signal, Permit, Landed time.Duration
}

// Points are the times of ps by intranode.TracePoint.
func (ps *PeerStages) Points() [intranode.NumTracePoints]*time.Duration {
	return [...]*time.Duration{intranode.Ready: &ps.Ready, intranode.Early: &ps.Early, intranode.Signal: &ps.Signal,
		intranode.Permit: &ps.Permit, intranode.Landed: &ps.Landed}
}

// tracer holds the events of a traced call.
type tracer struct {
	start, reduce, p2p, end device.Event
	scatter                 []device.Event // one per copy stream
	used                    int            // scatter events recorded by the last call
	recorded                bool
	// points[p][at] is the event of node peer p's trace point at;
	// passed[p][at] says the last call recorded it; peerOrder is the order
	// the peers were first scattered to in the last call.
	points    [][intranode.NumTracePoints]device.Event
	passed    [][intranode.NumTracePoints]bool
	peerOrder []int
}

// Trace turns stage tracing on or off for later calls. A traced call records
// a few events; read them with LastStages after synchronizing.
func (c *Context) Trace(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !on {
		return c.closeTracer()
	}
	if c.tracer != nil {
		return nil
	}
	t := &tracer{}
	events := []*device.Event{&t.start, &t.reduce, &t.p2p, &t.end}
	for range c.streams.Copy {
		t.scatter = append(t.scatter, nil)
	}
	for i := range t.scatter {
		events = append(events, &t.scatter[i])
	}
	lws := c.place.Shape.LocalSize
	t.points, t.passed = make([][intranode.NumTracePoints]device.Event, lws), make([][intranode.NumTracePoints]bool, lws)
	for p := range t.points {
		for at := range t.points[p] {
			events = append(events, &t.points[p][at])
		}
	}
	for _, e := range events {
		ev, err := c.dev.NewEvent()
		if err != nil {
			c.tracer = t
			return errors.Join(err, c.closeTracer())
		}
		*e = ev
	}
	c.tracer = t
	return nil
}

func (c *Context) closeTracer() error {
	t := c.tracer
	if t == nil {
		return nil
	}
	c.tracer = nil
	var errs []error
	all := append([]device.Event{t.start, t.reduce, t.p2p, t.end}, t.scatter...)
	for _, pts := range t.points {
		all = append(all, pts[:]...)
	}
	for _, e := range all {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(errs...)
}

// mark records ev on s when tracing.
func (c *Context) mark(pick func(*tracer) device.Event, s device.Stream) error {
	if c.tracer == nil {
		return nil
	}
	return pick(c.tracer).Record(s)
}

// startTrace resets what the last traced call recorded of the peers.
func (c *Context) startTrace() {
	if t := c.tracer; t != nil {
		t.passed = make([][intranode.NumTracePoints]bool, len(t.points))
		t.peerOrder = t.peerOrder[:0]
	}
}

// peerTracer returns, when tracing, the intranode.Step.Trace hook that
// records the peers' trace points.
func (c *Context) peerTracer() func(device.Stream, int, intranode.TracePoint) error {
	t := c.tracer
	if t == nil {
		return nil
	}
	return func(s device.Stream, p int, at intranode.TracePoint) error {
		if !slices.Contains(t.peerOrder, p) {
			t.peerOrder = append(t.peerOrder, p)
		}
		t.passed[p][at] = true
		return t.points[p][at].Record(s)
	}
}

// markScatter records the end of the scatter on the streams that carried it
// (at most one per copy stream).
func (c *Context) markScatter(on ...device.Stream) error {
	if c.tracer == nil {
		return nil
	}
	for i, s := range on {
		if err := c.tracer.scatter[i].Record(s); err != nil {
			return err
		}
	}
	c.tracer.used = len(on)
	c.tracer.recorded = true
	return nil
}

// LastStages returns the stage end times of the last traced call, which
// must have completed (synchronize its stream first).
func (c *Context) LastStages() (Stages, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tracer
	if t == nil || !t.recorded {
		return Stages{}, fmt.Errorf("rs2d: no traced call to report: %w", device.ErrInvalidArgument)
	}
	var st Stages
	var err error
	since := func(e device.Event) time.Duration {
		d, e2 := e.Since(t.start)
		err = errors.Join(err, e2)
		return d
	}
	for _, e := range t.scatter[:t.used] {
		st.Scatter = max(st.Scatter, since(e))
	}
	for _, p := range t.peerOrder {
		ps := PeerStages{LocalRank: p}
		for at, d := range ps.Points() {
			if t.passed[p][at] {
				*d = since(t.points[p][at])
			}
		}
		st.Peers = append(st.Peers, ps)
	}
	st.IntraReduce = since(t.reduce)
	if c.place.Shape.Nodes > 1 {
		st.InterNode = since(t.p2p)
	}
	st.Total = since(t.end)
	return st, err
}
