package internode

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/symm"
)

// ncclRail is the rail stage over NCCL point-to-point. Each rail (the ranks
// with one local rank, one per node) has Lanes communicators of its own, in
// which a rank's NCCL rank is its node id. Send is two-sided: on every lane,
// one NCCL group sends the lane's share of the block to node `to` and
// receives, straight into the receive buffer, the share of the block that
// node RailSource(node, to) sends here at the same node step. The lanes run
// on streams of their own, forked from and joined back into Send's stream:
// each communicator has its own connections and proxy, so across hosts
// (NCCL's network transports) the lanes carry a block in parallel where one
// communicator's point-to-point moves a fraction of what the network takes.
// NCCL's own flow control stands in for arrival words, and since a receive
// is posted only when this rank reaches that step, the two parity sets are
// more than NCCL needs; they keep RecvBuf's contract the same as the other
// transports'.
//
// A receive is complete when Send's stream gets past the join, so Send
// records an event there per source node and Wait makes its stream wait on
// those events (free when, as in rs2d, the waiting stream has already joined
// the sending one).
type ncclRail struct {
	ep      Endpoint
	comms   []railComm      // one per lane
	lanes   []device.Stream // one per lane
	forked  device.Event    // Send's stream, before the lanes start
	landed  []device.Event  // by lane: its share of the current send done
	recv    [2]device.Ptr   // by parity: nnodes × BlockBytes each, from ep.Dev.Alloc
	arrived []device.Event  // by source node (nil for this node): recorded after its receive
	closed  bool
}

// railComm is what the transport uses of an NCCL communicator (*nccl.Comm;
// tests give a fake).
type railComm interface {
	Group(fn func() error) error
	Send(buf nccl.Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error
	Recv(buf nccl.Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error
	AsyncError() error
	Destroy() error
	Abort() error
}

// DefaultNCCLLanes is the NCCL transport's communicators per rail when
// Endpoint.Lanes is 0.
const DefaultNCCLLanes = 8

// MaxNCCLLanes bounds Endpoint.Lanes.
const MaxNCCLLanes = 16

func ncclLanes(ep Endpoint) int {
	if ep.Lanes <= 0 {
		return DefaultNCCLLanes
	}
	return ep.Lanes
}

// newNCCL builds the transport on every rank (collective; all ranks succeed
// or all fail).
func newNCCL(ctx context.Context, ep Endpoint) (*ncclRail, error) {
	place := ep.Place
	// Step 1: every rank checks that it can run NCCL, and the rail roots
	// (the ranks of node 0) create their rails' unique ids, one per lane.
	// The all-gather that agrees on it carries the ids: every rank
	// contributes, and each picks its rail root's.
	lanes := ncclLanes(ep)
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
			for range lanes {
				u, err := lib.UniqueID()
				if err != nil {
					return fmt.Errorf("rank %d: creating the unique ids of rail %d: %w", place.Rank, place.LocalRank, err)
				}
				id = append(id, u[:]...)
			}
		}
		return nil
	}()
	ids, err := bootstrap.Agree(ctx, ep.Comm, err, id)
	if err != nil {
		return nil, fmt.Errorf("internode: nccl: %w", err)
	}

	// Step 2: join the rail's communicators and allocate the receive
	// buffers, then agree again: a rank that could not join (or whose peers
	// never joined, which the bound on the join turns into an error) takes
	// every rank down with it instead of leaving it waiting.
	t := &ncclRail{ep: ep}
	err = func() error {
		rootIDs, err := railRootIDs(ids, place, lanes)
		if err != nil {
			return err
		}
		ordinal := ep.Dev.Info().Ordinal
		for lane, rootID := range rootIDs {
			what := fmt.Sprintf("ncclCommInitRank (rail %d lane %d: rank %d of %d, device %d)", place.LocalRank, lane, place.Node, place.Shape.Nodes, ordinal)
			comm, err := bounded(ctx, what, func() (*nccl.Comm, error) {
				return lib.InitRank(place.Shape.Nodes, rootID, place.Node, ordinal)
			}, func(c *nccl.Comm, _ error) {
				if c != nil {
					_ = c.Abort()
				}
			})
			if err != nil {
				return fmt.Errorf("rank %d: joining the communicator of rail %d, lane %d: %w", place.Rank, place.LocalRank, lane, err)
			}
			t.comms = append(t.comms, comm)
		}
		return t.allocate()
	}()
	if _, err := bootstrap.Agree(ctx, ep.Comm, err, nil); err != nil {
		return nil, errors.Join(fmt.Errorf("internode: nccl: %w", err), t.release(true))
	}
	return t, nil
}

// checkNCCLEndpoint refuses what NCCL could not count: it moves elements of
// a type, so blocks are counted in ep.DType. (newNCCL names the transport.)
func checkNCCLEndpoint(ep Endpoint) error {
	if ep.Lanes < 0 || ep.Lanes > MaxNCCLLanes {
		return fmt.Errorf("Endpoint.Lanes %d: want 0 (default %d) to %d: %w", ep.Lanes, DefaultNCCLLanes, MaxNCCLLanes, device.ErrInvalidArgument)
	}
	if !ep.DType.Valid() {
		return fmt.Errorf("Endpoint.DType %v is not an element type NCCL can count blocks in: %w", ep.DType, device.ErrInvalidArgument)
	}
	if es := int64(ep.DType.Size()); ep.BlockBytes <= 0 || ep.BlockBytes%es != 0 {
		return fmt.Errorf("BlockBytes %d is not a positive multiple of the %v element size %d: %w",
			ep.BlockBytes, ep.DType, es, device.ErrInvalidArgument)
	}
	return nil
}

// railRootIDs picks this rank's rail's unique ids (one per lane) out of
// everyone's contributions (by world rank): the ones from the rail's rank on
// node 0.
func railRootIDs(ids [][]byte, place symm.Place, lanes int) ([][nccl.UniqueIDSize]byte, error) {
	root := place.RailPeer(0)
	if want := lanes * nccl.UniqueIDSize; root >= len(ids) || len(ids[root]) != want {
		n := -1
		if root < len(ids) {
			n = len(ids[root])
		}
		return nil, fmt.Errorf("rank %d, the root of rail %d, sent %d bytes of unique ids, want %d (%d lanes): %w",
			root, place.LocalRank, n, want, lanes, device.ErrPeer)
	}
	out := make([][nccl.UniqueIDSize]byte, lanes)
	for i := range out {
		copy(out[i][:], ids[root][i*nccl.UniqueIDSize:])
	}
	return out, nil
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
	var err error
	if t.forked, err = t.ep.Dev.NewEvent(); err != nil {
		return fmt.Errorf("rank %d: rail fork event: %w", t.ep.Place.Rank, err)
	}
	for range t.comms {
		s, err := t.ep.Dev.NewStream(device.Normal)
		if err != nil {
			return fmt.Errorf("rank %d: rail lane stream: %w", t.ep.Place.Rank, err)
		}
		t.lanes = append(t.lanes, s)
		e, err := t.ep.Dev.NewEvent()
		if err != nil {
			return fmt.Errorf("rank %d: rail lane event: %w", t.ep.Place.Rank, err)
		}
		t.landed = append(t.landed, e)
	}
	return nil
}

// release frees what the transport holds: the communicators first, then the
// events and the buffers. Destroy waits for a communicator's work, which
// may wait for a peer that is gone, so the communicators are destroyed only
// once the lanes' streams drained without an asynchronous error within the
// endpoint's timeout; otherwise they are aborted (which does not wait for
// the work), and the error says so. The native calls are bounded too: one
// that does not return leaves the buffers allocated rather than freed under
// it.
func (t *ncclRail) release(abort bool) error {
	var errs []error
	if !abort && len(t.comms) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), t.ep.closeTimeout())
		err := t.settled(ctx)
		cancel()
		if err != nil {
			abort = true
			errs = append(errs, fmt.Errorf("internode: nccl: rank %d: the rail's work did not finish, so its communicators are aborted instead of destroyed: %w",
				t.ep.Place.Rank, err))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.ep.closeTimeout())
	defer cancel()
	stuck := false
	for lane, c := range t.comms {
		call, fn := "ncclCommDestroy", c.Destroy
		if abort {
			call, fn = "ncclCommAbort", c.Abort
		}
		what := fmt.Sprintf("%s (rank %d, rail %d lane %d)", call, t.ep.Place.Rank, t.ep.Place.LocalRank, lane)
		_, err := bounded(ctx, what, func() (struct{}, error) { return struct{}{}, fn() }, nil)
		if errors.Is(err, device.ErrTimeout) {
			stuck = true
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("internode: nccl: %w", err))
		}
	}
	t.comms = nil
	if stuck {
		return errors.Join(append(errs, fmt.Errorf("internode: nccl: rank %d: a communicator call still runs; the rail's buffers stay allocated", t.ep.Place.Rank))...)
	}
	for _, e := range append(append(t.arrived, t.landed...), t.forked) {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	t.arrived, t.landed, t.forked = nil, nil, nil
	for _, s := range t.lanes {
		errs = append(errs, s.Close())
	}
	t.lanes = nil
	for i, p := range t.recv {
		if p != 0 {
			errs = append(errs, t.ep.Dev.Free(p))
			t.recv[i] = 0
		}
	}
	return errors.Join(errs...)
}

// settled waits, within ctx, for the work on the lanes' streams and checks
// that no communicator reported an asynchronous error.
func (t *ncclRail) settled(ctx context.Context) error {
	for lane, s := range t.lanes {
		if err := s.Synchronize(ctx); err != nil {
			return fmt.Errorf("lane %d: %w", lane, err)
		}
	}
	for lane, c := range t.comms {
		if err := c.AsyncError(); err != nil {
			return fmt.Errorf("lane %d: %w", lane, err)
		}
	}
	return nil
}

func (t *ncclRail) Kind() Kind { return NCCL }

func (t *ncclRail) RecvBuf(epoch uint32) device.Ptr { return t.recv[parity(epoch)] }

// Send runs, on every lane's stream (forked from s, joined back into it),
// one NCCL group: the lane's share of the n bytes at src to node to, and the
// same share of the block from node RailSource(node, to) into the receive
// buffer. Every rank of the rail makes the same calls with the same n, so
// each send meets its receive at the same node step and lane.
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
		if err := t.sendLanes(s, to, from, src, dst, n/es); err != nil {
			return fmt.Errorf("internode: nccl: rank %d: sending to node %d, receiving from node %d: %w", place.Rank, to, from, err)
		}
	}
	if e := t.arrived[from]; e != nil {
		return e.Record(s)
	}
	return nil
}

// sendLanes splits count elements over the lanes (in whole 16-byte
// pieces where it can, the last lane taking the rest) and runs each lane's
// group on its stream between the fork from s and the join back.
func (t *ncclRail) sendLanes(s device.Stream, to, from int, src, dst device.Ptr, count int64) error {
	es := int64(t.ep.DType.Size())
	align := max(1, 16/es)
	per := (count + int64(len(t.comms)) - 1) / int64(len(t.comms))
	per = (per + align - 1) / align * align
	if err := t.forked.Record(s); err != nil {
		return err
	}
	var used []int
	for lane, comm := range t.comms {
		lo := min(int64(lane)*per, count)
		hi := min(lo+per, count)
		if hi == lo {
			break
		}
		ls := t.lanes[lane]
		if err := ls.WaitEvent(t.forked); err != nil {
			return err
		}
		h := ls.Handle()
		err := comm.Group(func() error {
			if err := comm.Send(nccl.Ptr(src.Add(lo*es)), hi-lo, t.ep.DType, to, h); err != nil {
				return err
			}
			return comm.Recv(nccl.Ptr(dst.Add(lo*es)), hi-lo, t.ep.DType, from, h)
		})
		if err != nil {
			return fmt.Errorf("lane %d: %w", lane, err)
		}
		if err := t.landed[lane].Record(ls); err != nil {
			return err
		}
		used = append(used, lane)
	}
	for _, lane := range used {
		if err := s.WaitEvent(t.landed[lane]); err != nil {
			return err
		}
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

// Consumed implements Transport: nothing, as a receive of the next call is
// ordered after this call's reads on the caller's streams.
func (t *ncclRail) Consumed(device.Stream, uint32) error { return nil }
