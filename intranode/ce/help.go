package ce

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode"
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
func (e *Engine) helpedPeer() int {
	return intranode.RankSwizzle(e.env.Place.LocalRank, e.lws())[e.lws()-2]
}

// Help enqueues on s, the producer's stream after its GEMM, the push of the
// last rows rows of the last node peer's block of step (the call's first
// node step, with GEMM overlap) by grid kernel blocks, once the peer is
// ready for the call; that call's scatter (the next, of step.Epoch) copies
// only the rows before them and raises the peer's arrival after both.
// Nothing without overlap, with one rank per node, or for rows <= 0. The
// ready wait is not the call's last on its word: the words must only grow
// (symm.Growing).
func (e *Engine) Help(s device.Stream, step intranode.Step, rows, grid int) error {
	if !e.overlap() || e.lws() < 2 || rows <= 0 {
		return nil
	}
	rows = min(rows, step.RowsPer)
	if e.helped == nil {
		ev, err := e.env.Dev.NewEvent()
		if err != nil {
			return err
		}
		e.helped = ev
	}
	peer := e.helpedPeer()
	if err := e.ready.At(e.env.Place.Rank, peer).Wait(s, uint32(step.Epoch)); err != nil {
		return err
	}
	dst, src := e.blockRows(step, peer, step.RowsPer-rows)
	one := kernels.Blocks{Src: src, N: 1, Count: int64(rows) * int64(e.env.Cols), Self: 0, SelfSrc: src}
	if err := kernels.LaunchReduce(e.env.Dev, s, e.env.DType, grid, dst, one); err != nil {
		return fmt.Errorf("ce: push to local rank %d: %w", peer, err)
	}
	if err := e.helped.Record(s); err != nil {
		return err
	}
	e.helpRows, e.helpEpoch = rows, step.Epoch
	return nil
}
