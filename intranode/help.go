package intranode

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/kernels"
)

// Help: where the copies set the pace (a short GEMM, or fp8 halving it),
// the copy engine is still sending the last peer's block when the GEMM
// ends and the SMs fall idle. The producer then pushes the last rows of
// that block with its SMs (a one-block reduce kernel is a copy), beside the
// copy engine, which sends only the rows before them and raises the peer's
// arrival once both are done.

// helpedPeer is the last node peer in scatter order: the block the copy
// engine sends last.
func (st *Stage) helpedPeer() int {
	return RankSwizzle(st.place.LocalRank, st.lws())[st.lws()-2]
}

// blockRows returns where row r of the block for node peer goes in its
// scatter buffer (dst) and where it is in this rank's input (src).
func (st *Stage) blockRows(step Step, peer, r int) (dst, src device.Ptr) {
	lws, me, rowBytes := st.lws(), st.place.LocalRank, st.rowBytes()
	destRank := step.Node*lws + peer
	src = step.Input.Add(int64(destRank*step.RowsPer+r) * rowBytes)
	dst = st.heap.At(st.place.NodePeer(peer), st.buf.ScatterBuf).Add(int64(step.Node*step.RowsPer*lws+me*step.RowsPer+r) * rowBytes)
	return dst, src
}

// Help enqueues on s, the producer's stream after its GEMM, the push of the
// last rows rows of the last node peer's block of step (the call's first
// node step, with GEMM overlap) by grid kernel blocks, once the peer is
// ready for the call; that call's Scatter (the next, of step.Epoch) copies
// only the rows before them and raises the peer's arrival after both.
// Nothing without overlap, with one rank per node, or for rows <= 0. The
// ready wait is not the call's last on its word: the words must only grow
// (symm.Growing).
func (st *Stage) Help(s device.Stream, step Step, rows, grid int) error {
	if !st.overlap || st.lws() < 2 || rows <= 0 {
		return nil
	}
	rows = min(rows, step.RowsPer)
	if st.helped == nil {
		ev, err := st.dev.NewEvent()
		if err != nil {
			return err
		}
		st.helped = ev
	}
	peer := st.helpedPeer()
	if err := st.ready.At(st.place.Rank, peer).Wait(s, uint32(step.Epoch)); err != nil {
		return err
	}
	dst, src := st.blockRows(step, peer, step.RowsPer-rows)
	one := kernels.Blocks{Src: src, N: 1, Count: int64(rows) * int64(st.n), Self: 0, SelfSrc: src}
	if err := kernels.LaunchReduce(st.dev, s, st.dt, grid, dst, one); err != nil {
		return fmt.Errorf("intranode: push to local rank %d: %w", peer, err)
	}
	if err := st.helped.Record(s); err != nil {
		return err
	}
	st.helpRows, st.helpEpoch = rows, step.Epoch
	return nil
}
