package rs2d

import (
	"errors"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// Stages is when each stage of the last traced call finished, measured from
// the start of the call on the device (stages overlap, so these are end
// times, not durations).
type Stages struct {
	Scatter     time.Duration // the last copy-engine copy landed
	IntraReduce time.Duration // the last intra-node reduce finished
	InterNode   time.Duration // the last rail send finished (0 on one node)
	Total       time.Duration // the final reduce finished: the whole call
}

// tracer holds the events of a traced call.
type tracer struct {
	start, reduce, p2p, end device.Event
	scatter                 []device.Event // one per copy stream
	used                    int            // scatter events recorded by the last call
	recorded                bool
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
	for _, e := range append([]device.Event{t.start, t.reduce, t.p2p, t.end}, t.scatter...) {
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
	st.IntraReduce = since(t.reduce)
	if c.place.Shape.Nodes > 1 {
		st.InterNode = since(t.p2p)
	}
	st.Total = since(t.end)
	return st, err
}
