package internode

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// Rail is one rank's rail stage: where each node step's reduced block goes
// (staged here before it is sent, or straight into the own node's slot of
// the receive buffer), the Transport that sends it to the rail peer on its
// node, and the final sum of the nnodes blocks that arrive.
type Rail struct {
	t       Transport
	ep      Endpoint
	staging device.Ptr // nnodes blocks of BlockBytes: the node-reduced blocks to send
}

// NewRail builds the rail stage with a transport of kind k (see New; it is
// collective over the whole job).
func NewRail(ctx context.Context, k Kind, ep Endpoint) (*Rail, error) {
	staging, err := ep.Dev.Alloc(int64(ep.Place.Shape.Nodes) * ep.BlockBytes)
	if err != nil {
		err = fmt.Errorf("internode: rank %d: staging buffer of %d bytes: %w", ep.Place.Rank, int64(ep.Place.Shape.Nodes)*ep.BlockBytes, err)
	}
	// Every rank learns of a failed allocation before the transport, which
	// is collective, is built.
	if _, err := bootstrap.Agree(ctx, ep.Comm, err, nil); err != nil {
		if staging != 0 {
			err = errors.Join(err, ep.Dev.Free(staging))
		}
		return nil, err
	}
	t, err := New(ctx, k, ep)
	if err != nil {
		return nil, errors.Join(err, ep.Dev.Free(staging))
	}
	return &Rail{t: t, ep: ep, staging: staging}, nil
}

// Kind is the transport in use.
func (r *Rail) Kind() Kind { return r.t.Kind() }

// BlockOf is where node step cur's reduced block goes in call epoch: the own
// node's block straight into its slot of the receive buffer, the others'
// into the staging buffer they are sent from.
func (r *Rail) BlockOf(cur int, epoch symm.Epoch) device.Ptr {
	if cur == r.ep.Place.Node {
		return r.t.RecvBuf(uint32(epoch)).Add(int64(cur) * r.ep.BlockBytes)
	}
	return r.staging.Add(int64(cur) * r.ep.BlockBytes)
}

// Send enqueues on s the transfer of node step cur's reduced block (n
// bytes) to the rail peer on node cur.
func (r *Rail) Send(s device.Stream, cur int, n int64, epoch symm.Epoch) error {
	return r.t.Send(s, cur, r.BlockOf(cur, epoch), n, uint32(epoch))
}

// Finish makes s wait for the blocks of every other node of call epoch and
// sums the nnodes blocks, count elements each, into out with at most grid
// thread blocks.
func (r *Rail) Finish(s device.Stream, out device.Ptr, count int64, epoch symm.Epoch, grid int) error {
	if err := r.t.Wait(s, uint32(epoch)); err != nil {
		return err
	}
	blocks := kernels.Blocks{
		Src:    r.t.RecvBuf(uint32(epoch)),
		Stride: r.ep.BlockBytes / int64(r.ep.DType.Size()),
		N:      r.ep.Place.Shape.Nodes,
		Count:  count,
		Self:   -1,
	}
	if err := kernels.LaunchReduce(r.ep.Dev, s, r.ep.DType, grid, out, blocks); err != nil {
		return err
	}
	return r.t.Consumed(s, uint32(epoch))
}

// ReleaseWaits ends the waits on this rank's own rail words where the
// transport can (see WaitReleaser); others end with the transport.
func (r *Rail) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	if wr, ok := r.t.(WaitReleaser); ok {
		return wr.ReleaseWaits(s, uint32(epoch))
	}
	return nil
}

// Close releases the transport (collective, see Transport.Close) and the
// staging buffer.
func (r *Rail) Close() error {
	return errors.Join(r.t.Close(), r.ep.Dev.Free(r.staging))
}
