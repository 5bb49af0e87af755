// Package symm is hiercoll's symmetric memory: every rank of a job allocates
// the same number of bytes laid out the same way (a Layout), and gets the
// address of each same-host peer's copy (a peer view, mapped with the
// device's IPC handles exchanged through the bootstrap). Offsets are the same
// on every rank, so "the scatter buffer of rank 3" is Peer(3) + offset.
//
// Teams name the ranks a stage talks to: the world, the node (the ranks that
// share NVLink: LSA in NCCL's words) and the rail (the same local rank on
// every node).
//
// Signal pads are regions of 32-bit words inside the heap, zeroed before any
// peer can see the heap; peers raise them with stream write-values and their
// owner waits on them with stream wait-values. signal.go is the protocol on
// them: how calls are told apart (Protocol: values that grow and are never
// reset, or the same values every call reset by their owner after the
// call's last wait, which CUDA graphs can replay), a call's value (Epoch), a
// word with its label (Signal: Raise, Wait, WaitLast), a pad of them
// (SignalPad) and the release of stuck waits.
//
// A Window (window.go) registers a caller's buffer instead, wherever it lies
// in an allocation of its rank: the same exchange of handles maps the
// same-host peers' buffers. Peer mappings are shared per device by heaps and
// windows, since a device maps an allocation only once.
package symm

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// Heap is one rank's symmetric allocation and its views of its peers'.
type Heap struct {
	dev    device.Device
	layout *Layout
	rank   int
	local  device.Ptr
	peers  []device.Ptr // by global rank; 0 where the peer is on another host
	maps   []*mapping   // the peer mappings, shared with windows (window.go)
	closed bool
}

// New allocates the layout's bytes on dev, zeroes the layout's zeroed regions
// and maps every same-host peer's heap. It is collective: every rank of comm
// calls it with an equal layout. If any rank fails, every rank returns an
// error and nothing stays allocated or mapped.
func New(ctx context.Context, comm bootstrap.Comm, dev device.Device, layout *Layout) (*Heap, error) {
	size := layout.Size()
	h := &Heap{dev: dev, layout: layout, rank: comm.Rank(), peers: make([]device.Ptr, comm.Size())}

	// Phase 1: allocate, zero the signal regions, export.
	var handle []byte
	localErr := func() error {
		if err := layout.Err(); err != nil {
			return fmt.Errorf("symm: rank %d: %w", h.rank, err)
		}
		p, err := dev.Alloc(size)
		if err != nil {
			return fmt.Errorf("symm: rank %d: allocating %d bytes: %w", h.rank, size, err)
		}
		h.local = p
		if err := zeroRegions(ctx, dev, p, layout); err != nil {
			return fmt.Errorf("symm: rank %d: zeroing signal pads: %w", h.rank, err)
		}
		handle, err = dev.ExportMem(p)
		if err != nil {
			return fmt.Errorf("symm: rank %d: exporting heap: %w", h.rank, err)
		}
		return nil
	}()
	me := peerInfo{host: dev.Info().HostID, size: size, digest: layout.digest(), handle: handle, failed: localErr != nil}
	open := func(infos []peerInfo) error { return h.open(infos, me) }
	if err := setUp(ctx, comm, "symmetric heap", me, localErr, decodePeerInfo, open, h.release); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Heap) open(infos []peerInfo, me peerInfo) error {
	for r, in := range infos {
		switch {
		case in.failed:
			return fmt.Errorf("symm: rank %d could not allocate its heap: %w", r, device.ErrPeer)
		case in.size != me.size || !bytes.Equal(in.digest, me.digest):
			return fmt.Errorf("symm: rank %d has a different heap layout (%d bytes) than rank %d (%d bytes): %w",
				r, in.size, h.rank, me.size, device.ErrInvalidArgument)
		}
	}
	for r, in := range infos {
		if r == h.rank {
			h.peers[r] = h.local
			continue
		}
		if in.host != me.host {
			continue
		}
		m, err := openMapping(h.dev, in.handle)
		if err != nil {
			return fmt.Errorf("symm: rank %d: mapping the heap of rank %d: %w", h.rank, r, err)
		}
		h.maps = append(h.maps, m)
		h.peers[r] = m.base
	}
	return nil
}

func zeroRegions(ctx context.Context, dev device.Device, base device.Ptr, l *Layout) error {
	var zeroed []Region
	for _, r := range l.regions {
		if r.Zeroed {
			zeroed = append(zeroed, r)
		}
	}
	if len(zeroed) == 0 {
		return nil
	}
	s, err := dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, r := range zeroed {
		if err := dev.Memset32(s, base.Add(r.Off), 0, r.Size/4); err != nil {
			return err
		}
	}
	return s.Synchronize(ctx)
}

// release frees what New got so far.
func (h *Heap) release() {
	for _, m := range h.maps {
		_ = m.close()
	}
	h.maps = nil
	clear(h.peers)
	if h.local != 0 {
		_ = h.dev.Free(h.local)
		h.local = 0
	}
}

// Local is the address of this rank's heap.
func (h *Heap) Local() device.Ptr { return h.local }

// Peer returns rank's heap as seen from here, and whether it is mapped (it
// is not when rank is on another host).
func (h *Heap) Peer(rank int) (device.Ptr, bool) {
	if rank < 0 || rank >= len(h.peers) {
		return 0, false
	}
	p := h.peers[rank]
	return p, p != 0
}

// At returns the address of region r in rank's heap. It panics if rank is not
// mapped: callers decide what to map by team before asking.
func (h *Heap) At(rank int, r Region) device.Ptr {
	p, ok := h.Peer(rank)
	if !ok {
		panic(fmt.Sprintf("symm: rank %d's heap is not mapped on rank %d", rank, h.rank))
	}
	return p.Add(r.Off)
}

// Word returns the address of word i of pad p in rank's heap, as seen from
// here (rank must be mapped).
func (h *Heap) Word(rank int, p Pad, i int) device.Ptr {
	return p.word(h.At(rank, p.Region), i)
}

// Mapped reports whether every rank of the team is mapped here.
func (h *Heap) Mapped(t team) bool {
	for _, r := range t.Ranks {
		if _, ok := h.Peer(r); !ok {
			return false
		}
	}
	return true
}

// Close unmaps the peers and frees this rank's heap. The caller must make sure
// (with a barrier) that no peer still writes into it.
func (h *Heap) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for _, m := range h.maps {
		errs = append(errs, m.close())
	}
	h.maps = nil
	clear(h.peers)
	if h.local != 0 {
		errs = append(errs, h.dev.Free(h.local))
		h.local = 0
	}
	return errors.Join(errs...)
}

// peerInfo is what each rank tells the others about its heap.
type peerInfo struct {
	host   string
	size   int64
	digest []byte
	handle []byte
	failed bool
}

func (p peerInfo) encode() []byte {
	return record(nil).bytes([]byte(p.host)).word(p.size).bytes(p.digest).bytes(p.handle).flag(p.failed)
}

func decodePeerInfo(b []byte) (peerInfo, error) {
	r := newReader(b)
	p := peerInfo{host: string(r.bytes()), size: r.word(), digest: r.bytes(), handle: r.bytes(), failed: r.flag()}
	return p, r.err()
}
