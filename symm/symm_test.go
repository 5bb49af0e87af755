package symm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

func TestMain(m *testing.M) { os.Exit(sim.RunTests(m)) }

// garbage is what a fresh allocation holds here: device memory is not
// zeroed, so the pads' zeros must come from New.
const garbage = 0xa5

var errInjected = errors.New("injected failure")

// testDevice is a rank's device with dirty allocations and, optionally, one
// step of New made to fail.
type testDevice struct {
	device.Device
	fail string // "alloc", "stream", "export" or "open"
}

func (d *testDevice) Alloc(size int64) (device.Ptr, error) {
	if d.fail == "alloc" {
		return 0, fmt.Errorf("alloc of %d bytes: %w", size, errInjected)
	}
	p, err := d.Device.Alloc(size)
	if err != nil {
		return 0, err
	}
	if err := d.Device.CopyToDevice(p, bytes.Repeat([]byte{garbage}, int(size))); err != nil {
		return 0, errors.Join(err, d.Device.Free(p))
	}
	return p, nil
}

func (d *testDevice) NewStream(p device.Priority) (device.Stream, error) {
	if d.fail == "stream" {
		return nil, errInjected
	}
	return d.Device.NewStream(p)
}

func (d *testDevice) ExportMem(p device.Ptr) ([]byte, error) {
	if d.fail == "export" {
		return nil, errInjected
	}
	return d.Device.ExportMem(p)
}

func (d *testDevice) OpenPeer(h []byte) (device.Ptr, error) {
	if d.fail == "open" {
		return 0, errInjected
	}
	return d.Device.OpenPeer(h)
}

func simWorld(t *testing.T, shape bootstrap.Shape, hostPerNode bool) *world.World {
	t.Helper()
	w, err := world.Sim(shape, world.SimOptions{HostPerNode: hostPerNode, Device: sim.Options{WaitTimeout: 5 * time.Second}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close()) })
	return w
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testLayout is a data region, a signal pad of one word per rank and a tail
// whose size is not a multiple of Align.
func testLayout(ranks int) (l *symm.Layout, scatter symm.Region, pad symm.Pad, tail symm.Region) {
	l = &symm.Layout{}
	scatter = l.Add("scatter", 1000)
	pad = l.AddPad("arrived", ranks)
	tail = l.Add("tail", 300)
	return l, scatter, pad, tail
}

func TestLayout(t *testing.T) {
	var empty symm.Layout
	require.Equal(t, int64(symm.Align), empty.Size(), "an empty layout still takes Align bytes")
	require.Empty(t, empty.Regions())

	l, scatter, pad, tail := testLayout(10)
	require.Equal(t, symm.Region{Name: "scatter", Off: 0, Size: 1000}, scatter)
	require.Equal(t, symm.Region{Name: "arrived", Off: 1024, Size: 40, Zeroed: true}, pad.Region)
	require.Equal(t, 10, pad.Words)
	require.Equal(t, symm.Region{Name: "tail", Off: 1280, Size: 300}, tail)
	require.Equal(t, int64(1792), l.Size())
	empty0 := l.Add("empty", 0)
	require.Equal(t, int64(1792), empty0.Off)
	require.Equal(t, int64(1792), l.Size(), "an empty region takes no space")
	regions := l.Regions()
	require.Equal(t, []symm.Region{scatter, pad.Region, tail, empty0}, regions)
	regions[0].Off = 999
	require.Equal(t, int64(0), l.Regions()[0].Off, "Regions returns a copy")
	for _, r := range l.Regions() {
		require.Zero(t, r.Off%symm.Align, "region %s", r.Name)
	}
	require.NoError(t, l.Err())
	l.Add("negative", -1) // refused by New, not a panic (sizes_test.go)
	require.ErrorIs(t, l.Err(), device.ErrInvalidArgument)
}

// rankView is what one rank saw of its heap, for checks across ranks.
type rankView struct {
	local device.Ptr
	peers []device.Ptr // 0: not mapped
}

func TestNewMapsSameHostPeers(t *testing.T) {
	cases := []struct {
		shape       bootstrap.Shape
		hostPerNode bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, false},
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, true},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, true},
		{bootstrap.Shape{Nodes: 4, LocalSize: 1}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/hostPerNode=%v", c.shape, c.hostPerNode), func(t *testing.T) {
			baseline := sim.Live()
			w := simWorld(t, c.shape, c.hostPerNode)
			ranks := c.shape.World()
			sameHost := func(a, b int) bool { return !c.hostPerNode || a/c.shape.LocalSize == b/c.shape.LocalSize }
			views := make([]rankView, ranks)
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
				return checkHeap(ctx, r, &views[r.Comm.Rank()], sameHost)
			})
			require.NoError(t, err)
			// Unified addressing: a view of rank q has q's own address.
			for me, v := range views {
				for q, p := range v.peers {
					if sameHost(me, q) {
						require.Equal(t, views[q].local, p, "rank %d's view of rank %d", me, q)
					} else {
						require.Zero(t, p, "rank %d maps rank %d on another host", me, q)
					}
				}
			}
			live := sim.Live()
			require.Equal(t, baseline.Allocs, live.Allocs, "allocations left")
			require.Equal(t, baseline.Views, live.Views, "peer views left")
		})
	}
}

// checkHeap runs on each rank: it builds a heap on dirty memory, checks the
// pads were zeroed and nothing else was, checks the addresses, raises a
// signal word and writes a block of bytes in every mapped peer's heap, and
// checks its own heap received exactly those of its same-host peers.
func checkHeap(ctx context.Context, r world.Rank, view *rankView, sameHost func(a, b int) bool) (err error) {
	me, ranks := r.Comm.Rank(), r.Comm.Size()
	dev := &testDevice{Device: r.Dev}
	layout, scatter, pad, tail := testLayout(ranks)
	h, err := symm.New(ctx, r.Comm, dev, layout)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.Close(), h.Close()) }()
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return err
	}
	local := h.Local()
	view.local = local
	if p, ok := h.Peer(me); !ok || p != local {
		return fmt.Errorf("Peer(me) = %v, %v; Local() = %v", p, ok, local)
	}
	for _, bad := range []int{-1, ranks} {
		if p, ok := h.Peer(bad); ok || p != 0 {
			return fmt.Errorf("Peer(%d) = %v, %v", bad, p, ok)
		}
	}
	if base, size, err := dev.AddressRange(local); err != nil || base != local || size != layout.Size() {
		return fmt.Errorf("heap range %v, %d, %v; want %v, %d", base, size, err, local, layout.Size())
	}

	// Only the pad is zeroed.
	heap := make([]byte, layout.Size())
	if err := dev.CopyToHost(heap, local); err != nil {
		return err
	}
	for _, reg := range []symm.Region{scatter, pad.Region, tail} {
		want := byte(garbage)
		if reg.Zeroed {
			want = 0
		}
		if got := heap[reg.Off : reg.Off+reg.Size]; !bytes.Equal(got, bytes.Repeat([]byte{want}, int(reg.Size))) {
			return fmt.Errorf("region %s is % x, want all %#x", reg.Name, got[:min(16, len(got))], want)
		}
	}

	// No peer writes into this heap before it has been checked.
	if err := r.Comm.Barrier(ctx); err != nil {
		return err
	}

	// Addresses, and which peers are mapped.
	view.peers = make([]device.Ptr, ranks)
	for q := range ranks {
		p, ok := h.Peer(q)
		if ok != sameHost(me, q) {
			return fmt.Errorf("Peer(%d) mapped = %v", q, ok)
		}
		if !ok {
			if !panics(func() { h.At(q, scatter) }) || !panics(func() { h.Word(q, pad, 0) }) {
				return fmt.Errorf("At/Word of unmapped rank %d did not panic", q)
			}
			continue
		}
		view.peers[q] = p
		if got := h.At(q, tail); got != p.Add(tail.Off) {
			return fmt.Errorf("At(%d, tail) = %v, want %v", q, got, p.Add(tail.Off))
		}
		for i := range pad.Words {
			if got, want := h.Word(q, pad, i), p.Add(pad.Off+4*int64(i)); got != want {
				return fmt.Errorf("Word(%d, pad, %d) = %v, want %v", q, i, got, want)
			}
		}
		if !panics(func() { h.Word(q, pad, pad.Words) }) || !panics(func() { h.Word(q, pad, -1) }) {
			return fmt.Errorf("Word out of the pad did not panic")
		}
	}
	if !h.Mapped(place.NodeTeam()) {
		return fmt.Errorf("node team %v not mapped", place.NodeTeam())
	}
	allMapped := true
	for q := range ranks {
		allMapped = allMapped && sameHost(me, q)
	}
	if h.Mapped(place.World()) != allMapped {
		return fmt.Errorf("Mapped(world) = %v, want %v", !allMapped, allMapped)
	}

	// Write through the views: word me of each peer's pad, and 8 bytes at
	// me*8 of its scatter region.
	s, err := dev.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	block := bytes.Repeat([]byte{byte(0x10 + me)}, 8)
	src, err := dev.Alloc(8)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dev.Free(src)) }()
	if err := dev.CopyToDevice(src, block); err != nil {
		return err
	}
	for q := range ranks {
		if q == me || !sameHost(me, q) {
			continue
		}
		if err := dev.WriteValue32(s, h.Word(q, pad, me), uint32(100+me)); err != nil {
			return err
		}
		if err := dev.Copy(s, h.At(q, scatter).Add(int64(8*me)), src, 8); err != nil {
			return err
		}
	}
	// The owner waits for its same-host peers' signals on its own pad.
	for q := range ranks {
		if q != me && sameHost(me, q) {
			w := device.Word{Addr: h.Word(me, pad, q), Label: fmt.Sprintf("arrival of rank %d", q)}
			if err := dev.WaitValue32(s, w, device.EQ, uint32(100+q)); err != nil {
				return err
			}
		}
	}
	if err := s.Synchronize(ctx); err != nil {
		return err
	}
	if err := r.Comm.Barrier(ctx); err != nil { // every peer's writes are done
		return err
	}
	if err := dev.CopyToHost(heap, local); err != nil {
		return err
	}
	for q := range ranks {
		word := binary.LittleEndian.Uint32(heap[pad.Off+4*int64(q):])
		got := heap[scatter.Off+int64(8*q) : scatter.Off+int64(8*q)+8]
		wantWord, wantBlock := uint32(0), bytes.Repeat([]byte{garbage}, 8)
		if q != me && sameHost(me, q) {
			wantWord, wantBlock = uint32(100+q), bytes.Repeat([]byte{byte(0x10 + q)}, 8)
		}
		if word != wantWord || !bytes.Equal(got, wantBlock) {
			return fmt.Errorf("from rank %d: pad word %d, block % x; want %d, % x", q, word, got, wantWord, wantBlock)
		}
	}
	// Nobody closes its heap while a peer may still read it.
	return r.Comm.Barrier(ctx)
}

func panics(f func()) (did bool) {
	defer func() { did = recover() != nil }()
	f()
	return false
}

// newOnEveryRank runs symm.New on every rank with the layout and device each
// rank is given, and returns each rank's error; heaps that were made are
// closed.
func newOnEveryRank(t *testing.T, w *world.World, layout func(rank int) *symm.Layout, dev func(r world.Rank) device.Device) []error {
	t.Helper()
	errs := make([]error, len(w.Ranks))
	var mu sync.Mutex
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
		h, err := symm.New(ctx, r.Comm, dev(r), layout(r.Comm.Rank()))
		if err == nil {
			err = h.Close()
			if err == nil {
				err = errors.New("New succeeded")
			}
		}
		mu.Lock()
		errs[r.Comm.Rank()] = err
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	return errs
}

func TestNewFailsEverywhereWhenLayoutsDiffer(t *testing.T) {
	odd := []struct {
		name   string
		layout func() *symm.Layout
	}{
		{"larger region", func() *symm.Layout {
			l := &symm.Layout{}
			l.Add("scatter", 2000)
			l.AddPad("arrived", 4)
			return l
		}},
		{"same sizes, another name", func() *symm.Layout {
			l := &symm.Layout{}
			l.Add("gather", 1000)
			l.AddPad("arrived", 4)
			return l
		}},
		{"same sizes, data instead of a pad", func() *symm.Layout {
			l := &symm.Layout{}
			l.Add("scatter", 1000)
			l.Add("arrived", 16)
			return l
		}},
		{"same size within Align", func() *symm.Layout {
			l := &symm.Layout{}
			l.Add("scatter", 1001)
			l.AddPad("arrived", 4)
			return l
		}},
	}
	shapes := []bootstrap.Shape{{Nodes: 1, LocalSize: 4}, {Nodes: 2, LocalSize: 2}}
	for _, o := range odd {
		for _, shape := range shapes {
			for _, hostPerNode := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/hostPerNode=%v", o.name, shape, hostPerNode), func(t *testing.T) {
					baseline := sim.Live()
					w := simWorld(t, shape, hostPerNode)
					const oddRank = 1
					errs := newOnEveryRank(t, w, func(rank int) *symm.Layout {
						if rank == oddRank {
							return o.layout()
						}
						l := &symm.Layout{}
						l.Add("scatter", 1000)
						l.AddPad("arrived", 4)
						return l
					}, func(r world.Rank) device.Device { return r.Dev })
					for rank, err := range errs {
						require.ErrorIs(t, err, device.ErrInvalidArgument, "rank %d", rank)
						require.ErrorContains(t, err, "different heap layout", "rank %d", rank)
						if rank != oddRank {
							require.ErrorContains(t, err, fmt.Sprintf("rank %d has a different heap layout", oddRank))
						}
					}
					live := sim.Live()
					require.Equal(t, baseline.Allocs, live.Allocs, "allocations left")
					require.Equal(t, baseline.Views, live.Views, "peer views left")
					require.Equal(t, baseline.Streams, live.Streams, "streams left")
				})
			}
		}
	}
}

func TestNewFailsEverywhereWhenOneRankFails(t *testing.T) {
	cases := []struct {
		fail    string
		shape   bootstrap.Shape
		badRank int
	}{
		{"alloc", bootstrap.Shape{Nodes: 1, LocalSize: 4}, 2},
		{"alloc", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 3},
		{"alloc", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 0},
		{"stream", bootstrap.Shape{Nodes: 1, LocalSize: 4}, 1},
		{"export", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 2},
		{"open", bootstrap.Shape{Nodes: 1, LocalSize: 4}, 0},
		{"open", bootstrap.Shape{Nodes: 2, LocalSize: 2}, 3},
	}
	for _, c := range cases {
		for _, hostPerNode := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%v/rank%d/hostPerNode=%v", c.fail, c.shape, c.badRank, hostPerNode), func(t *testing.T) {
				baseline := sim.Live()
				w := simWorld(t, c.shape, hostPerNode)
				layout := func(int) *symm.Layout { l, _, _, _ := testLayout(c.shape.World()); return l }
				errs := newOnEveryRank(t, w, layout, func(r world.Rank) device.Device {
					d := &testDevice{Device: r.Dev}
					if r.Comm.Rank() == c.badRank {
						d.fail = c.fail
					}
					return d
				})
				for rank, err := range errs {
					require.Error(t, err, "rank %d", rank)
					if rank == c.badRank {
						require.ErrorIs(t, err, errInjected)
						continue
					}
					require.NotErrorIs(t, err, errInjected, "rank %d", rank)
					require.ErrorIs(t, err, device.ErrPeer, "rank %d", rank)
					require.ErrorContains(t, err, fmt.Sprintf("rank %d could not", c.badRank), "rank %d", rank)
				}
				live := sim.Live()
				require.Equal(t, baseline.Allocs, live.Allocs, "allocations left")
				require.Equal(t, baseline.Views, live.Views, "peer views left")
				require.Equal(t, baseline.Streams, live.Streams, "streams left")

				// The ranks' collectives still line up: a second New works.
				err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
					h, err := symm.New(ctx, r.Comm, r.Dev, layout(r.Comm.Rank()))
					if err != nil {
						return err
					}
					return h.Close()
				})
				require.NoError(t, err)
				require.Equal(t, baseline.Allocs, sim.Live().Allocs)
			})
		}
	}
}

func TestPlaceAndTeams3x3(t *testing.T) {
	comms, err := bootstrap.Local(bootstrap.Shape{Nodes: 3, LocalSize: 3})
	require.NoError(t, err)
	want := []struct {
		node, localRank int
		nodeTeam        []int
		railTeam        []int
	}{
		{0, 0, []int{0, 1, 2}, []int{0, 3, 6}},
		{0, 1, []int{0, 1, 2}, []int{1, 4, 7}},
		{0, 2, []int{0, 1, 2}, []int{2, 5, 8}},
		{1, 0, []int{3, 4, 5}, []int{0, 3, 6}},
		{1, 1, []int{3, 4, 5}, []int{1, 4, 7}},
		{1, 2, []int{3, 4, 5}, []int{2, 5, 8}},
		{2, 0, []int{6, 7, 8}, []int{0, 3, 6}},
		{2, 1, []int{6, 7, 8}, []int{1, 4, 7}},
		{2, 2, []int{6, 7, 8}, []int{2, 5, 8}},
	}
	for rank, c := range comms {
		w := want[rank]
		p, err := symm.PlaceOf(c)
		require.NoError(t, err)
		require.Equal(t, symm.Place{Shape: bootstrap.Shape{Nodes: 3, LocalSize: 3}, Rank: rank, Node: w.node, LocalRank: w.localRank}, p)
		for i := range 3 {
			require.Equal(t, w.nodeTeam[i], p.NodePeer(i), "rank %d NodePeer(%d)", rank, i)
			require.Equal(t, w.railTeam[i], p.RailPeer(i), "rank %d RailPeer(%d)", rank, i)
		}
		node, rail, all := p.NodeTeam(), p.RailTeam(), p.World()
		require.Equal(t, symm.Team{Name: "node", Ranks: w.nodeTeam, Me: w.localRank}, node)
		require.Equal(t, symm.Team{Name: "rail", Ranks: w.railTeam, Me: w.node}, rail)
		require.Equal(t, symm.Team{Name: "world", Ranks: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, Me: rank}, all)
		for _, team := range []symm.Team{node, rail, all} {
			require.Equal(t, rank, team.Ranks[team.Me], "%v", team)
			require.Equal(t, len(team.Ranks), team.Size())
		}
		require.Equal(t, fmt.Sprintf("node team %v (me: %d)", w.nodeTeam, rank), node.String())
	}
	require.NoError(t, errors.Join(func() []error {
		var errs []error
		for _, c := range comms {
			errs = append(errs, c.Close())
		}
		return errs
	}()...))
}

// fakeComm has a numbering of its own making.
type fakeComm struct {
	bootstrap.Comm
	rank, size, localRank, localSize int
}

func (c fakeComm) Rank() int      { return c.rank }
func (c fakeComm) Size() int      { return c.size }
func (c fakeComm) LocalRank() int { return c.localRank }
func (c fakeComm) LocalSize() int { return c.localSize }

func TestPlaceOfRejectsBadNumbering(t *testing.T) {
	cases := []struct {
		name string
		c    fakeComm
	}{
		{"local size does not divide", fakeComm{rank: 0, size: 6, localRank: 0, localSize: 4}},
		{"not node-major", fakeComm{rank: 4, size: 6, localRank: 0, localSize: 3}},
		{"rank out of range", fakeComm{rank: 6, size: 6, localRank: 0, localSize: 3}},
		{"empty world", fakeComm{rank: 0, size: 0, localRank: 0, localSize: 1}},
	}
	for _, c := range cases {
		_, err := symm.PlaceOf(c.c)
		require.ErrorIs(t, err, device.ErrInvalidArgument, c.name)
	}
	p, err := symm.PlaceOf(fakeComm{rank: 5, size: 6, localRank: 2, localSize: 3})
	require.NoError(t, err)
	require.Equal(t, 1, p.Node)
	require.Equal(t, 2, p.LocalRank)
}

// Call epochs alternate in parity (the rail's two receive-buffer sets) and
// skip 0 (the pads' initial value), also across the 32-bit wrap.
func TestEpochsAlternateAcrossTheWrap(t *testing.T) {
	for _, e := range []symm.Epoch{0, 1, 2, 1<<31 - 1, 1 << 31, math.MaxUint32 - 2, math.MaxUint32 - 1, math.MaxUint32} {
		next := e.Next()
		require.NotZero(t, next, "after %d", e)
		require.NotEqual(t, e.Parity(), next.Parity(), "after %d comes %d: the same parity", e, next)
		require.Greater(t, int32(next-e), int32(0), "after %d comes %d: not ahead cyclically", e, next)
	}
	require.Equal(t, symm.Epoch(2), symm.Epoch(math.MaxUint32).Next())
}
