package sim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seed12530e24/hiercoll/device"
)

// Simulated CUDA graphs. While a stream captures, what is enqueued on it is
// recorded as a node of its lane instead of being queued; an event recorded
// there becomes an edge, and another stream that waits for that event joins
// the capture with a lane of its own (fork), until the origin waits for an
// event recorded on it (join). A launch replays every lane with the
// arguments fixed at capture: the origin's on the launching stream, the
// others on streams of the graph's own, each edge a fresh record per launch.

var _ device.Grapher = (*Device)(nil)

// capture is one capture in progress (or ended: a graph's recording).
type capture struct {
	origin *stream
	lanes  []*lane // lanes[0] is the origin's
	edges  int
	ended  bool
}

// lane is what one stream enqueued while captured.
type lane struct {
	s     *stream
	nodes []node
}

// node is one captured piece of work: an op, or the record (signal) of edge
// n or the wait (await) for it.
type node struct {
	op     op
	signal int    // > 0: this node completes edge signal
	await  int    // > 0: this node waits for edge await
	event  *event // with signal: the event recorded, recorded again by each launch
}

// capturedRecord marks an event last recorded inside a capture.
type capturedRecord struct {
	c    *capture
	edge int
}

// Capturing reports whether the stream is being captured.
func (s *stream) Capturing() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capture != nil, nil
}

// captured appends n to s's lane if s is being captured, and reports it.
func (s *stream) captured(n node) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.capture == nil {
		return false
	}
	for _, l := range s.capture.lanes {
		if l.s == s {
			l.nodes = append(l.nodes, n)
			return true
		}
	}
	panic("sim: a capturing stream without a lane")
}

// BeginCapture implements device.Grapher.
func (d *Device) BeginCapture(s device.Stream) error {
	st, err := d.own(s)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.capture != nil {
		return fmt.Errorf("sim: %s is already being captured: %w", st.name, device.ErrInvalidArgument)
	}
	c := &capture{origin: st}
	c.lanes = []*lane{{s: st}}
	st.capture = c
	return nil
}

// EndCapture implements device.Grapher. Every stream that joined the capture
// must have been joined back into the origin, as CUDA requires: its lane's
// last node records an edge the origin waits for.
func (d *Device) EndCapture(s device.Stream) (device.Graph, error) {
	st, err := d.own(s)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	c := st.capture
	st.mu.Unlock()
	if c == nil || c.origin != st {
		return nil, fmt.Errorf("sim: %s: no capture began on it: %w", st.name, device.ErrInvalidArgument)
	}
	for _, l := range c.lanes {
		l.s.mu.Lock()
		l.s.capture = nil
		l.s.mu.Unlock()
	}
	c.ended = true
	if err := c.joined(); err != nil {
		return nil, err
	}
	g := &graph{dev: d, c: c}
	for range c.lanes[1:] {
		g.side = append(g.side, newStream(d, fmt.Sprintf("%s graph stream %d", d.name, d.streams.Add(1))))
	}
	return g, nil
}

// joined checks that every side lane ends with a record the origin awaits.
func (c *capture) joined() error {
	awaited := map[int]bool{}
	for _, n := range c.lanes[0].nodes {
		if n.await > 0 {
			awaited[n.await] = true
		}
	}
	for _, l := range c.lanes[1:] {
		if len(l.nodes) == 0 {
			continue
		}
		last := l.nodes[len(l.nodes)-1]
		if last.signal == 0 || !awaited[last.signal] {
			return fmt.Errorf("sim: capture on %s: work captured on %s was not joined back into it: %w",
				c.origin.name, l.s.name, device.ErrInvalidArgument)
		}
	}
	return nil
}

// graph is an ended capture with the streams its side lanes run on.
type graph struct {
	dev  *Device
	c    *capture
	side []*stream

	mu     sync.Mutex
	closed bool
}

// Launch implements device.Graph.
func (g *graph) Launch(s device.Stream) error {
	st, err := g.dev.own(s)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return fmt.Errorf("sim: launch of a closed graph: %w", device.ErrClosed)
	}
	records := make([]*record, g.c.edges+1)
	for i := range records {
		records[i] = &record{done: make(chan struct{})}
	}
	timeout := 4 * g.dev.opts.WaitTimeout
	for i, l := range g.c.lanes {
		on := st
		if i > 0 {
			on = g.side[i-1]
		}
		for _, n := range l.nodes {
			if err := on.enqueue(replay(on, n, records, timeout)); err != nil {
				return err
			}
		}
	}
	return nil
}

// replay is the op that runs node n on stream on in one launch.
func replay(on *stream, n node, records []*record, timeout time.Duration) op {
	switch {
	case n.signal > 0:
		rec := records[n.signal]
		rec.stream = on.name
		if n.event != nil {
			n.event.mu.Lock()
			n.event.rec, n.event.captured = rec, nil
			n.event.mu.Unlock()
		}
		return op{always: true, run: func() error {
			rec.at = time.Now()
			rec.err = on.failure()
			close(rec.done)
			return nil
		}}
	case n.await > 0:
		rec := records[n.await]
		return op{run: func() error {
			select {
			case <-rec.done:
				if rec.err != nil {
					return fmt.Errorf("waiting on captured work of %s: %w", rec.stream, rec.err)
				}
				return nil
			case <-time.After(timeout):
				return &device.TimeoutError{Stream: on.name, What: "wait on captured work of " + rec.stream, After: timeout}
			}
		}}
	}
	return n.op
}

// Close implements device.Graph.
func (g *graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	var errs []error
	for _, s := range g.side {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
