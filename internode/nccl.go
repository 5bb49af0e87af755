package internode

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/symm"
)

// ncclRail is the rail stage over NCCL point-to-point. Each rail (the ranks
// with one local rank, one per node) has a communicator of its own, in which
// a rank's NCCL rank is its node id. Send is two-sided: one NCCL group on the
// stream sends the block to node `to` and receives, straight into the
// receive buffer, the block that node RailSource(node, to) sends here at the
// same node step. NCCL's own flow control stands in for arrival words, and
// since a receive is posted only when this rank reaches that step, the two
// parity sets are more than NCCL needs; they keep RecvBuf's contract the
// same as the other transports'.
//
// A receive is complete when the stream that ran its group gets past it, so
// Send records an event there per source node and Wait makes its stream wait
// on those events (free when, as in rs2d, the waiting stream has already
// joined the sending one).
type ncclRail struct {
	ep      Endpoint
	comm    *nccl.Comm
	recv    [2]device.Ptr  // by parity: nnodes × BlockBytes each, from ep.Dev.Alloc
	arrived []device.Event // by source node (nil for this node): recorded after its receive
	closed  bool
}

// newNCCL builds the transport on every rank (collective; all ranks succeed
// or all fail).
func newNCCL(ctx context.Context, ep Endpoint) (*ncclRail, error) {
	place := ep.Place
	// Step 1: every rank checks that it can run NCCL, and the rail roots
	// (the ranks of node 0) create their rails' unique ids. The all-gather
	// that agrees on it carries the ids: every rank contributes, and each
	// picks its rail root's.
	var lib *nccl.Lib
	var id []byte
	err := func() error {
		if err := checkNCCLEndpoint(ep); err != nil {
			return err
		}
		if err := needCUDA(ep.Dev); err != nil {
			return err
		}
		l, err := nccl.Load()
		if err != nil {
			return err
		}
		lib = l
		if place.Node == 0 {
			u, err := lib.UniqueID()
			if err != nil {
				return fmt.Errorf("rank %d: creating the unique id of rail %d: %w", place.Rank, place.LocalRank, err)
			}
			id = u[:]
		}
		return nil
	}()
	ids, err := agree(ctx, ep.Comm, err, id)
	if err != nil {
		return nil, fmt.Errorf("internode: nccl: %w", err)
	}

	// Step 2: join the rail's communicator and allocate the receive
	// buffers, then agree again: a rank that could not join (or whose peers
	// never joined, which the bound on the join turns into an error) takes
	// every rank down with it instead of leaving it waiting.
	t := &ncclRail{ep: ep}
	err = func() error {
		rootID, err := railRootID(ids, place)
		if err != nil {
			return err
		}
		ordinal := ep.Dev.Info().Ordinal
		what := fmt.Sprintf("ncclCommInitRank (rail %d: rank %d of %d, device %d)", place.LocalRank, place.Node, place.Shape.Nodes, ordinal)
		t.comm, err = bounded(ctx, what, func() (*nccl.Comm, error) {
			return lib.InitRank(place.Shape.Nodes, rootID, place.Node, ordinal)
		}, func(c *nccl.Comm, _ error) {
			if c != nil {
				_ = c.Abort()
			}
		})
		if err != nil {
			return fmt.Errorf("rank %d: joining the communicator of rail %d: %w", place.Rank, place.LocalRank, err)
		}
		return t.allocate()
	}()
	if _, err := agree(ctx, ep.Comm, err, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("internode: nccl: %w", err), t.release(true))
	}
	return t, nil
}

// checkNCCLEndpoint refuses what NCCL could not count: it moves elements of
// a type, so blocks are counted in ep.DType. (newNCCL names the transport.)
func checkNCCLEndpoint(ep Endpoint) error {
	if !ep.DType.Valid() {
		return fmt.Errorf("Endpoint.DType %v is not an element type NCCL can count blocks in: %w", ep.DType, device.ErrInvalidArgument)
	}
	if es := int64(ep.DType.Size()); ep.BlockBytes <= 0 || ep.BlockBytes%es != 0 {
		return fmt.Errorf("BlockBytes %d is not a positive multiple of the %v element size %d: %w",
			ep.BlockBytes, ep.DType, es, device.ErrInvalidArgument)
	}
	return nil
}

// railRootID picks this rank's rail's unique id out of everyone's
// contributions (by world rank): the one from the rail's rank on node 0.
func railRootID(ids [][]byte, place symm.Place) ([nccl.UniqueIDSize]byte, error) {
	var id [nccl.UniqueIDSize]byte
	root := place.RailPeer(0)
	if root >= len(ids) || len(ids[root]) != len(id) {
		n := -1
		if root < len(ids) {
			n = len(ids[root])
		}
		return id, fmt.Errorf("rank %d, the root of rail %d, sent a unique id of %d bytes, want %d: %w",
			root, place.LocalRank, n, len(id), device.ErrPeer)
	}
	copy(id[:], ids[root])
	return id, nil
}

func (t *ncclRail) allocate() error {
	size := int64(t.ep.Place.Shape.Nodes) * t.ep.BlockBytes
	for i := range t.recv {
		p, err := t.ep.Dev.Alloc(size)
		if err != nil {
			return fmt.Errorf("rank %d: allocating rail receive buffer %d (%d bytes): %w", t.ep.Place.Rank, i, size, err)
		}
		t.recv[i] = p
	}
	t.arrived = make([]device.Event, t.ep.Place.Shape.Nodes)
	for n := range t.arrived {
		if n == t.ep.Place.Node {
			continue
		}
		e, err := t.ep.Dev.NewEvent()
		if err != nil {
			return fmt.Errorf("rank %d: rail arrival event: %w", t.ep.Place.Rank, err)
		}
		t.arrived[n] = e
	}
	return nil
}

// release frees what the transport holds: the communicator first (Destroy
// waits for its work, which writes into the receive buffers; abort does
// not), then the events and the buffers.
func (t *ncclRail) release(abort bool) error {
	var errs []error
	if t.comm != nil {
		if abort {
			errs = append(errs, t.comm.Abort())
		} else {
			errs = append(errs, t.comm.Destroy())
		}
		t.comm = nil
	}
	for _, e := range t.arrived {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	t.arrived = nil
	for i, p := range t.recv {
		if p != 0 {
			errs = append(errs, t.ep.Dev.Free(p))
			t.recv[i] = 0
		}
	}
	return errors.Join(errs...)
}

func (t *ncclRail) Kind() Kind { return NCCL }

func (t *ncclRail) RecvBuf(epoch uint32) device.Ptr { return t.recv[Parity(epoch)] }

// Send runs one NCCL group on s: n bytes at src to node to, and n bytes from
// node RailSource(node, to) into its block of the receive buffer. Every rank
// of the rail makes the same calls with the same n, so each send meets its
// receive at the same node step.
func (t *ncclRail) Send(s device.Stream, to int, src device.Ptr, n int64, epoch uint32) error {
	if t.closed {
		return fmt.Errorf("internode: nccl: send on a closed transport: %w", device.ErrClosed)
	}
	if err := checkBlock(NCCL, t.ep, to, n); err != nil {
		return err
	}
	es := int64(t.ep.DType.Size())
	if n%es != 0 {
		return fmt.Errorf("internode: nccl: block of %d bytes is not a whole number of %v elements: %w", n, t.ep.DType, device.ErrInvalidArgument)
	}
	place := t.ep.Place
	from := RailSource(place.Node, to, place.Shape.Nodes)
	dst := t.RecvBuf(epoch).Add(int64(from) * t.ep.BlockBytes)
	if n > 0 {
		h := s.Handle()
		err := t.comm.Group(func() error {
			if err := t.comm.Send(src, n/es, t.ep.DType, to, h); err != nil {
				return err
			}
			return t.comm.Recv(dst, n/es, t.ep.DType, from, h)
		})
		if err != nil {
			return fmt.Errorf("internode: nccl: rank %d: sending to node %d, receiving from node %d: %w", place.Rank, to, from, err)
		}
	}
	if e := t.arrived[from]; e != nil {
		return e.Record(s)
	}
	return nil
}

// Wait makes s wait for the receives of every other node (stream order
// does the rest).
func (t *ncclRail) Wait(s device.Stream, epoch uint32) error {
	if t.closed {
		return fmt.Errorf("internode: nccl: wait on a closed transport: %w", device.ErrClosed)
	}
	for n, e := range t.arrived {
		if e == nil {
			continue
		}
		if err := s.WaitEvent(e); err != nil {
			return fmt.Errorf("internode: nccl: waiting for the block from node %d: %w", n, err)
		}
	}
	return nil
}

// Close destroys the rail communicator and frees the buffers. Every rank
// closes its transports in the same order (see Transport.Close).
func (t *ncclRail) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	return t.release(false)
}
