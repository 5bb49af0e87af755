package internode

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/symm"
)

// ipc is the same-host transport: the rail peers' receive buffers are mapped
// here, so a send is a copy-engine copy into the peer's buffer followed by a
// write of the epoch into the peer's arrival word for this node.
//
// Under symm.Replayable every call has the same epoch, so one receive set:
// a sender first waits for its credit from the receiver (which the receiver
// raises once it has read its previous block, and which starts raised) and
// resets it; the receiver resets its arrival word after the wait.
type ipc struct {
	ep      Endpoint
	heap    *symm.Heap
	recv    [2]symm.Region
	arrived symm.SignalPad // nnodes words, by source node
	credits symm.SignalPad // nnodes words, by receiving node (symm.Replayable)
}

// ipcLayout is the transport's symmetric heap for nodes blocks of block
// bytes: two signal pads and two receive sets (by call parity).
func ipcLayout(nodes int, block int64) (l *symm.Layout, arrived, credits symm.Pad, recv [2]symm.Region) {
	l = &symm.Layout{}
	arrived = l.AddPad("rail arrivals", nodes)
	credits = l.AddPad("rail credits", nodes)
	for i := range recv {
		recv[i] = l.Add(fmt.Sprintf("rail receive %d", i), int64(nodes)*block)
	}
	return l, arrived, credits, recv
}

func newIPC(ctx context.Context, ep Endpoint) (*ipc, error) {
	t := &ipc{ep: ep}
	l, arrived, credits, recv := ipcLayout(ep.Place.Shape.Nodes, ep.BlockBytes)
	t.recv = recv
	heap, err := symm.New(ctx, ep.Comm, ep.Dev, l)
	if err != nil {
		return nil, fmt.Errorf("internode: ipc: %w", err)
	}
	if !heap.Mapped(ep.Place.RailTeam()) {
		// Every rank sees the same hosts, so every rank gives up here.
		return nil, errors.Join(
			fmt.Errorf("internode: ipc: rank %d's rail peers are not all on its host: %w", ep.Place.Rank, device.ErrNotSupported),
			heap.Close())
	}
	t.heap = heap
	t.arrived = heap.Signals(arrived, ep.Protocol, func(_, n int) string {
		return fmt.Sprintf("rail block from rank %d (node %d, local rank %d), sent once every rank of node %d has sent it its rows (Close names a rank that never called)",
			ep.Place.RailPeer(n), n, ep.Place.LocalRank, n)
	})
	t.credits = heap.Signals(credits, ep.Protocol, func(_, n int) string {
		return fmt.Sprintf("rail credit from rank %d (node %d)", ep.Place.RailPeer(n), n)
	})
	if ep.Protocol == symm.Replayable {
		// Every receiver may take a first block. No peer raises a credit
		// here before this rank's first send, which comes after New.
		if err := t.credits.Fill(1); err != nil {
			return nil, errors.Join(fmt.Errorf("internode: ipc: %w", err), heap.Close())
		}
	}
	return t, nil
}

func (t *ipc) Kind() Kind { return IPC }

func (t *ipc) RecvBuf(epoch uint32) device.Ptr {
	return t.heap.Local().Add(t.recv[parity(epoch)].Off)
}

func (t *ipc) Send(s device.Stream, to int, src device.Ptr, n int64, epoch uint32) error {
	if n > t.ep.BlockBytes {
		return fmt.Errorf("internode: ipc: block of %d bytes exceeds %d: %w", n, t.ep.BlockBytes, device.ErrInvalidArgument)
	}
	peer := t.ep.Place.RailPeer(to)
	me := t.ep.Place.Node
	if t.ep.Protocol == symm.Replayable {
		if err := t.credits.At(t.ep.Place.Rank, to).WaitLast(s, 1); err != nil {
			return err
		}
	}
	dst := t.heap.At(peer, t.recv[parity(epoch)]).Add(int64(me) * t.ep.BlockBytes)
	if n > 0 {
		if err := t.ep.Dev.Copy(s, dst, src, n); err != nil {
			return fmt.Errorf("internode: ipc: put to rank %d: %w", peer, err)
		}
	}
	return t.arrived.At(peer, me).Raise(s, epoch)
}

func (t *ipc) Wait(s device.Stream, epoch uint32) error {
	for n := 0; n < t.ep.Place.Shape.Nodes; n++ {
		if n == t.ep.Place.Node {
			continue
		}
		if err := t.arrived.At(t.ep.Place.Rank, n).WaitLast(s, epoch); err != nil {
			return err
		}
	}
	return nil
}

// Consumed raises, under symm.Replayable, this rank's credit on every
// sender: the blocks it sent are read.
func (t *ipc) Consumed(s device.Stream, _ uint32) error {
	if t.ep.Protocol != symm.Replayable {
		return nil
	}
	me := t.ep.Place.Node
	for n := 0; n < t.ep.Place.Shape.Nodes; n++ {
		if n == me {
			continue
		}
		if err := t.credits.At(t.ep.Place.RailPeer(n), me).Raise(s, 1); err != nil {
			return fmt.Errorf("internode: ipc: credit to node %d: %w", n, err)
		}
	}
	return nil
}

func (t *ipc) Close() error { return t.heap.Close() }

// ReleaseWaits enqueues on s the write of a value past every epoch into this
// rank's arrival words, ending any wait on them (see
// intranode.Engine.ReleaseWaits).
func (t *ipc) ReleaseWaits(s device.Stream, epoch uint32) error {
	return errors.Join(t.arrived.Release(s, epoch), t.credits.Release(s, epoch))
}
