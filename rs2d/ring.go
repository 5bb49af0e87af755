package rs2d

import (
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/symm"
)

// enqueueRing is a call with the ring, on the caller's stream. The call
// goes in rail rounds of Memory.RailRows rows of every destination's block
// (one round on one node, or when the rail buffers hold a whole call): per
// round, one ring launch per node step (node swizzle, own node last), each
// sent on to its rail peer on the p2p stream, then the round's sum of the
// nnodes blocks into its rows of out. Each round is a rail "call" of its
// own (railSeq), so the rail's receive sets alternate by round and a rail
// peer is never two rounds ahead.
func (c *Context) enqueueRing(in, out Tensor, s device.Stream, epoch symm.Epoch) error {
	shape, place := c.place.Shape, c.place
	rpr := in.Rows / shape.World()
	per := rpr
	if c.rail != nil {
		per = c.mem.RailRows
	}
	for r0 := 0; r0 < rpr; r0 += per {
		rows := min(per, rpr-r0)
		seq := epoch
		if c.rail != nil {
			c.railSeq = c.railSeq.Next()
			seq = c.railSeq
		}
		for n := 0; n < shape.Nodes; n++ {
			cur := (place.Node + n + 1) % shape.Nodes
			to := out.Ptr.Add(int64(r0) * c.rowBytes())
			if c.rail != nil {
				to = c.rail.BlockOf(cur, seq)
			}
			step := intranode.RingStep{Node: cur, Input: in.Ptr, RowsPer: rpr, Row0: r0, Rows: rows, Epoch: epoch, ReduceTo: to}
			if err := c.intra.Ring(s, step); err != nil {
				return err
			}
			if err := c.sendRail(s, cur, rows, seq); err != nil {
				return err
			}
		}
		if err := c.markNodeStage(s); err != nil {
			return err
		}
		if c.rail == nil {
			continue
		}
		// The next round's launches write the staging blocks this round's
		// sends read: s waits for them, then sums the round.
		if err := c.streams.Join(s, c.streams.P2P); err != nil {
			return err
		}
		if err := c.mark(func(t *tracer) device.Event { return t.p2p }, s); err != nil {
			return err
		}
		dst := out.Ptr.Add(int64(r0) * c.rowBytes())
		if err := c.rail.Finish(s, dst, int64(rows)*int64(c.cfg.N), seq, c.finalGrid()); err != nil {
			return err
		}
	}
	if err := c.done.Record(s); err != nil {
		return err
	}
	return c.mark(func(t *tracer) device.Event { return t.end }, s)
}

// railEpoch is the rail's last value: the call's epoch, or the ring's
// last rail round.
func (c *Context) railEpoch() symm.Epoch {
	if c.cfg.Engine == EngineRing {
		return c.railSeq
	}
	return c.epoch
}
