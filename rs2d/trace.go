package rs2d

import (
	"errors"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/intranode/ce"
)

// Stages is when each stage of the last traced call finished, measured from
// the start of the call on the device (stages overlap, so these are end
// times, not durations).
type Stages struct {
	Scatter time.Duration // the scatter finished (the last copy landed, or the last push-reduce)
	// Peers follows each node peer's rows through the copy-engine scatter
	// (not the SM engine's), in the order they are scattered.
	Peers       []PeerStages
	IntraReduce time.Duration // the last intra-node reduce finished
	// ReduceReady is when the copy engine's reduction stream passed its
	// waits before the last reduce (the peers' arrivals and, with GEMM
	// overlap, the own block's signals); 0 for other engines.
	ReduceReady time.Duration
	InterNode   time.Duration // the last rail send finished (0 on one node)
	Total       time.Duration // the final reduce finished: the whole call
	// Rounds is when each round of a call in rounds (under a bound) ended
	// its last node step, in the rounds' order (their ends need not be: on
	// one node the pull engine's rounds alternate between two streams);
	// nil for a call in one round. Staged is, beside it, when each round's
	// staging copy ended (the pull engine's rounds of an unregistered
	// input; 0 for a round that staged nothing).
	Rounds, Staged []time.Duration
}

// PeerStages is when the copy-engine scatter of one node peer's rows passed
// its points, from the start of the call: its ready flag (first node step
// only; 0 otherwise), the copy of its early rows (the first peer when the
// first block is split), its GEMM signal and its permit (with
// OverlapWithGEMM; the first peer needs no permit), and its last copy
// landing. With several node steps, the last step's. 0: not passed.
type PeerStages struct {
	LocalRank                            int
	Ready, Early, Signal, Permit, Landed time.Duration
}

// Points are ps's times in the order the scatter passes them.
func (ps *PeerStages) Points() []*time.Duration {
	return []*time.Duration{&ps.Ready, &ps.Early, &ps.Signal, &ps.Permit, &ps.Landed}
}

// tracer holds the events of a traced call.
type tracer struct {
	start, scatter, reduce, p2p, end device.Event
	// rounds are the ends of the rounds of a call in rounds and staged
	// the ends of their staging copies (made as calls need them; staging
	// says which of the last call's rounds staged), of which the last call
	// recorded used the first nrounds.
	rounds, staged []device.Event
	staging        []bool // the last call's rounds that staged
	nrounds        int
	recorded       bool
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
	c.tracer = t
	for _, e := range []*device.Event{&t.start, &t.scatter, &t.reduce, &t.p2p, &t.end} {
		ev, err := c.dev.NewTimedEvent()
		if err != nil {
			return errors.Join(err, c.closeTracer())
		}
		*e = ev
	}
	if c.ce != nil {
		if err := c.ce.Trace(true); err != nil {
			return errors.Join(err, c.closeTracer())
		}
	}
	return nil
}

func (c *Context) closeTracer() error {
	t := c.tracer
	if t == nil {
		return nil
	}
	c.tracer = nil
	var errs []error
	if c.ce != nil {
		errs = append(errs, c.ce.Trace(false))
	}
	errs = append(errs, closeEvents(append(append([]device.Event{t.start, t.scatter, t.reduce, t.p2p, t.end}, t.rounds...), t.staged...)))
	return errors.Join(errs...)
}

// mark records the event pick chooses on s when tracing.
func (c *Context) mark(pick func(*tracer) device.Event, s device.Stream) error {
	if c.tracer == nil {
		return nil
	}
	c.tracer.recorded = true
	return pick(c.tracer).Record(s)
}

// markRound marks the end of round i of a call in n rounds (done's
// Reduced) and of its staging copy (done's Staged, where not nil), when
// tracing and n > 1.
func (c *Context) markRound(done intranode.Done, i, n int) error {
	t := c.tracer
	if t == nil || n < 2 {
		return nil
	}
	for len(t.rounds) <= i {
		var evs [2]device.Event
		for k := range evs {
			ev, err := c.dev.NewTimedEvent()
			if err != nil {
				return errors.Join(err, closeEvents(evs[:k]))
			}
			evs[k] = ev
		}
		t.rounds, t.staged, t.staging = append(t.rounds, evs[0]), append(t.staged, evs[1]), append(t.staging, false)
	}
	t.nrounds = n
	t.staging[i] = done.Staged != nil
	if t.staging[i] {
		if err := t.staged[i].Record(done.Staged); err != nil {
			return err
		}
	}
	return t.rounds[i].Record(done.Reduced)
}

// closeEvents closes evs, but the nil ones.
func closeEvents(evs []device.Event) error {
	var errs []error
	for _, e := range evs {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	return errors.Join(errs...)
}

// markNodeStage marks on s the end of both the scatter and the reduce of
// the node stage, for engines that do both in one place (one kernel, one
// copy).
func (c *Context) markNodeStage(s device.Stream) error {
	if err := c.mark(func(t *tracer) device.Event { return t.scatter }, s); err != nil {
		return err
	}
	return c.mark(func(t *tracer) device.Event { return t.reduce }, s)
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
	var errs []error
	since := func(e device.Event) time.Duration {
		d, err := e.Since(t.start)
		errs = append(errs, err)
		return d
	}
	st := Stages{Scatter: since(t.scatter), IntraReduce: since(t.reduce), Total: since(t.end)}
	for i, e := range t.rounds[:t.nrounds] {
		st.Rounds = append(st.Rounds, since(e))
		var staged time.Duration
		if t.staging[i] {
			staged = since(t.staged[i])
		}
		st.Staged = append(st.Staged, staged)
	}
	if c.rail != nil {
		st.InterNode = since(t.p2p)
	}
	var peers []ce.PeerTimes
	if c.ce != nil {
		var err error
		peers, err = c.ce.Traced(t.start)
		errs = append(errs, err)
		st.ReduceReady, err = c.ce.ReduceReady(t.start)
		errs = append(errs, err)
	}
	for _, p := range peers {
		ps := PeerStages{LocalRank: p.LocalRank}
		for at, d := range ps.Points() {
			*d = p.At[at]
		}
		st.Peers = append(st.Peers, ps)
	}
	return st, errors.Join(errs...)
}
