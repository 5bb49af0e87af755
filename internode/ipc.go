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
type ipc struct {
	ep      Endpoint
	heap    *symm.Heap
	recv    [2]symm.Region
	arrived symm.SignalPad // nnodes words, by source node
}

func newIPC(ctx context.Context, ep Endpoint) (*ipc, error) {
	nodes := ep.Place.Shape.Nodes
	var l symm.Layout
	t := &ipc{ep: ep}
	arrived := l.AddPad("rail arrivals", nodes)
	for i := range t.recv {
		t.recv[i] = l.Add(fmt.Sprintf("rail receive %d", i), int64(nodes)*ep.BlockBytes)
	}
	heap, err := symm.New(ctx, ep.Comm, ep.Dev, &l)
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
	t.arrived = heap.Signals(arrived, func(_, n int) string {
		return fmt.Sprintf("rail block from rank %d (node %d, local rank %d), sent once every rank of node %d has sent it its rows (Close names a rank that never called)",
			ep.Place.RailPeer(n), n, ep.Place.LocalRank, n)
	})
	return t, nil
}

func (t *ipc) Kind() Kind { return IPC }

func (t *ipc) RecvBuf(epoch uint32) device.Ptr {
	return t.heap.Local().Add(t.recv[Parity(epoch)].Off)
}

func (t *ipc) Send(s device.Stream, to int, src device.Ptr, n int64, epoch uint32) error {
	if n > t.ep.BlockBytes {
		return fmt.Errorf("internode: ipc: block of %d bytes exceeds %d: %w", n, t.ep.BlockBytes, device.ErrInvalidArgument)
	}
	peer := t.ep.Place.RailPeer(to)
	me := t.ep.Place.Node
	dst := t.heap.At(peer, t.recv[Parity(epoch)]).Add(int64(me) * t.ep.BlockBytes)
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
		if err := t.arrived.At(t.ep.Place.Rank, n).Wait(s, epoch); err != nil {
			return err
		}
	}
	return nil
}

func (t *ipc) Close() error { return t.heap.Close() }

// ReleaseWaits enqueues on s the write of a value past every epoch into this
// rank's arrival words, ending any wait on them (see
// intranode.Stage.ReleaseWaits).
func (t *ipc) ReleaseWaits(s device.Stream, epoch uint32) error {
	return t.arrived.Release(s, epoch)
}
