package rs2d

import (
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// enqueue enqueues call epoch on s: one loop over node steps, the same for
// every engine.
//
// The call goes in rail rounds of Memory.RailRows rows of every
// destination's block (one round, unless the ring or the pull engine
// rounds a call under a bound): per round, one engine step per node step (node swizzle, own node
// last), each sent on to its rail peer on the p2p stream after the step's
// block is complete, then the round's sum of the nnodes blocks into its rows
// of out. Each round of a ring is a rail "call" of its own (railSeq), so the
// rail's receive sets alternate by round and a rail peer is never two
// rounds ahead.
func (c *Context) enqueue(in, out Tensor, s device.Stream, epoch symm.Epoch, summed bool) error {
	if err := c.mark(func(t *tracer) device.Event { return t.start }, s); err != nil {
		return err
	}
	if c.ce != nil {
		c.ce.BeginTrace()
	}
	if c.place.Shape.World() == 1 {
		return c.enqueueLocal(in, out, s, epoch)
	}
	rpr := in.Rows / c.place.Shape.World()
	call := intranode.Call{Epoch: epoch, Input: in.Ptr, RowsPer: rpr, Summed: summed}
	if r := c.registrationOf(in); r != nil { // read in place (Register)
		call.InputViews, call.InputSerial, call.InputPeers, call.InputWholePages = r.views, r.serial, r.peers, r.wholePages
	}
	if err := c.engine.Begin(s, call); err != nil {
		return err
	}
	per := min(rpr, c.mem.RailRows) // whole blocks but where a bound rounds the call
	if call.InputViews != 0 && c.rail == nil {
		// A registered input on one node is read in place: the bound's
		// rounds were for staging sets it does not use.
		per = rpr
	}
	if c.tracer != nil {
		c.tracer.nrounds = 0
	}
	r0 := 0
	rounds := intranode.RoundRows(rpr, per, c.shortFirstRound(per, rpr))
	for i, rows := range rounds {
		seq := epoch
		if c.rail != nil && c.roundsRail() {
			c.railSeq = c.railSeq.Next()
			seq = c.railSeq
		}
		done, err := c.nodeSteps(out, s, call, r0, rows, seq)
		if err != nil {
			return err
		}
		if err := c.markRound(done, i, len(rounds)); err != nil {
			return err
		}
		if err := c.endRound(out, s, call, done, r0, rows, seq, r0+rows >= rpr); err != nil {
			return err
		}
		r0 += rows
	}
	if !c.capturing {
		// A record in a capture only orders the captured work: replays
		// would not record it, so Close cannot wait for them (the caller
		// synchronizes its replays before Close).
		if err := c.done.Record(s); err != nil {
			return err
		}
	}
	return c.mark(func(t *tracer) device.Event { return t.end }, s)
}

// shortFirstRound reports whether a call of rpr rows per block in rounds
// of per starts with a short round: the pull engine's staged rounds on
// nodes of two GPUs, where shortening the first round's copy, which no
// pull hides, measured a gain (on four GPUs it did not: RESULTS.md).
func (c *Context) shortFirstRound(per, rpr int) bool {
	return c.mem.PullRows > 0 && per < rpr && c.place.Shape.LocalSize == 2
}

// nodeSteps enqueues one round's node steps, rows [r0, r0+rows) of each
// destination's block, each step's block sent to its rail peer after it;
// it returns where the last step's work ends (and the staging copy of
// whichever step staged the round).
func (c *Context) nodeSteps(out Tensor, s device.Stream, call intranode.Call, r0, rows int, seq symm.Epoch) (intranode.Done, error) {
	shape, place := c.place.Shape, c.place
	var done intranode.Done
	var staged device.Stream
	for n := 0; n < shape.Nodes; n++ {
		cur := (place.Node + n + 1) % shape.Nodes
		chunks := c.chunks(call.RowsPer)
		if call.Summed { // an arrival per GEMM segment, which the producer's sum waits for
			chunks = c.gemm.Segments()
		}
		step := intranode.Step{Call: call, Node: cur, Row0: r0, Rows: rows, Chunks: chunks,
			First: n == 0 && r0 == 0, Last: n == shape.Nodes-1 && r0+rows >= call.RowsPer,
			ReduceTo: out.Ptr.Add(int64(r0) * c.rowBytes())}
		if c.rail != nil {
			step.ReduceTo = c.rail.BlockOf(cur, seq)
		}
		var err error
		if done, err = c.engine.Step(s, step); err != nil {
			return done, err
		}
		if done.Staged != nil {
			staged = done.Staged
		}
		if err := c.sendRail(done.Reduced, cur, rows, seq); err != nil {
			return done, err
		}
	}
	done.Staged = staged
	return done, nil
}

// endRound ends a rail round on s: after the last round the engine's end
// (its streams joined back into s, the node stage's trace marks before it);
// then, across nodes, s waits for the rail's sends and sums the round's
// nnodes blocks into its rows of out.
func (c *Context) endRound(out Tensor, s device.Stream, call intranode.Call, done intranode.Done, r0, rows int, seq symm.Epoch, last bool) error {
	if last {
		if err := c.mark(func(t *tracer) device.Event { return t.scatter }, done.Landed); err != nil {
			return err
		}
		if err := c.mark(func(t *tracer) device.Event { return t.reduce }, done.Reduced); err != nil {
			return err
		}
		if err := c.engine.End(s, call); err != nil {
			return err
		}
	}
	if c.rail == nil {
		return nil
	}
	// The next round's steps write the staging blocks this round's sends
	// read: s waits for them, then sums the round.
	if err := c.streams.Join(s, c.streams.P2P); err != nil {
		return err
	}
	if err := c.mark(func(t *tracer) device.Event { return t.p2p }, s); err != nil {
		return err
	}
	dst := out.Ptr.Add(int64(r0) * c.rowBytes())
	return c.rail.Finish(s, dst, int64(rows)*int64(c.cfg.N), seq, c.finalGrid())
}

// enqueueLocal is a call on a world of one rank: the sum over one rank is
// its input, so the call is one device-to-device copy (after the GEMM
// signal, with overlap).
func (c *Context) enqueueLocal(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	if c.cfg.OverlapWithGEMM {
		if err := c.gemm.WaitBlock(s, 0, in.Rows, epoch); err != nil {
			return err
		}
	}
	if err := c.dev.Copy(s, out.Ptr, in.Ptr, out.Bytes()); err != nil {
		return err
	}
	if err := c.markNodeStage(s); err != nil {
		return err
	}
	if !c.capturing {
		if err := c.done.Record(s); err != nil {
			return err
		}
	}
	return c.mark(func(t *tracer) device.Event { return t.end }, s)
}

// sendRail sends node step cur's reduced block, which after is ordered
// after, to the rail peer on node cur, on the p2p stream (nothing for the
// own node, or on one node).
func (c *Context) sendRail(after device.Stream, cur, rows int, seq symm.Epoch) error {
	if c.rail == nil || cur == c.place.Node {
		return nil
	}
	if err := c.streams.Join(c.streams.P2P, after); err != nil {
		return err
	}
	return c.rail.Send(c.streams.P2P, cur, int64(rows)*c.rowBytes(), seq)
}

// railEpoch is the rail's last value: the call's epoch, or the last rail
// round of an engine that goes in rounds.
func (c *Context) railEpoch() symm.Epoch {
	if c.roundsRail() {
		return c.railSeq
	}
	return c.epoch
}

// roundsRail reports whether the rail counts rounds rather than calls: the
// ring's and the bounded pull engine's calls go in rounds.
func (c *Context) roundsRail() bool { return c.cfg.Engine == EngineRing || c.mem.PullRows > 0 }
