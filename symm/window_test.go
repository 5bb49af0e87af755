package symm_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// windowBytes is what rank writes into its buffer number i.
func windowBytes(rank, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(rank*31 + i*7 + j)
	}
	return b
}

// Two buffers registered at different offsets of one allocation (as
// PyTorch's allocator carves tensors out of one segment): every rank reads
// each same-host peer's buffers through its windows, the second window
// shares the first's mapping (a device maps an allocation once), closing
// the first leaves the second readable, and closing both unmaps the
// allocation (it then opens afresh).
func TestWindowsShareOneAllocation(t *testing.T) {
	for _, c := range []struct {
		shape       bootstrap.Shape
		hostPerNode bool
	}{
		{bootstrap.Shape{Nodes: 1, LocalSize: 4}, false},
		{bootstrap.Shape{Nodes: 2, LocalSize: 2}, true},
		{bootstrap.Shape{Nodes: 1, LocalSize: 2}, false},
	} {
		t.Run(fmt.Sprintf("%v/hostPerNode=%v", c.shape, c.hostPerNode), func(t *testing.T) {
			baseline := sim.Live()
			w := simWorld(t, c.shape, c.hostPerNode)
			const size = 1000
			offs := []int64{256, 1536} // the second one 2 KiB from the first
			sameHost := func(a, b int) bool { return !c.hostPerNode || a/c.shape.LocalSize == b/c.shape.LocalSize }
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
				me := r.Comm.Rank()
				seg, err := r.Dev.Alloc(4096)
				if err != nil {
					return err
				}
				defer r.Dev.Free(seg)
				wins := make([]*symm.Window, len(offs))
				for i, off := range offs {
					if err := r.Dev.CopyToDevice(seg.Add(off), windowBytes(me, i, size)); err != nil {
						return err
					}
					if wins[i], err = symm.NewWindow(ctx, r.Comm, r.Dev, seg.Add(off), size); err != nil {
						return err
					}
				}
				read := func(i int) error {
					for q := range r.Comm.Size() {
						p, ok := wins[i].Peer(q)
						if ok != sameHost(me, q) {
							return fmt.Errorf("rank %d: window %d maps rank %d: %v", me, i, q, ok)
						}
						if !ok {
							continue
						}
						got := make([]byte, size)
						if err := r.Dev.CopyToHost(got, p); err != nil {
							return err
						}
						if !bytes.Equal(got, windowBytes(q, i, size)) {
							return fmt.Errorf("rank %d: window %d: rank %d's buffer reads wrong", me, i, q)
						}
					}
					return nil
				}
				for i := range wins {
					if wins[i].Local() != seg.Add(offs[i]) || wins[i].Size() != size {
						return fmt.Errorf("rank %d: window %d is %v, %d bytes", me, i, wins[i].Local(), wins[i].Size())
					}
					if err := read(i); err != nil {
						return err
					}
				}
				if err := wins[0].Close(); err != nil {
					return err
				}
				if err := read(1); err != nil {
					return fmt.Errorf("after closing the first window: %w", err)
				}
				if err := wins[1].Close(); err != nil {
					return err
				}
				return wins[1].Close() // a second Close is a no-op
			})
			require.NoError(t, err)
			require.Zero(t, symm.MappedPeers(), "mappings left")
			require.Equal(t, baseline.Views, sim.Live().Views, "peer views left")
		})
	}
}

// A rank that registers another size makes every rank fail with
// ErrInvalidArgument naming the sizes and their ranks; nothing stays mapped,
// and a registration after it works.
func TestWindowSizesMustMatch(t *testing.T) {
	baseline := sim.Live()
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	w := simWorld(t, shape, false)
	errs := make([]error, shape.World())
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
		p, err := r.Dev.Alloc(8192)
		if err != nil {
			return err
		}
		defer r.Dev.Free(p)
		size := int64(4096)
		if r.Comm.Rank() == 2 {
			size = 2048
		}
		win, err := symm.NewWindow(ctx, r.Comm, r.Dev, p, size)
		errs[r.Comm.Rank()] = err
		if err == nil {
			_ = win.Close()
		}
		win, err = symm.NewWindow(ctx, r.Comm, r.Dev, p, 4096)
		if err != nil {
			return fmt.Errorf("registering equal sizes afterwards: %w", err)
		}
		return win.Close()
	})
	require.NoError(t, err)
	for rank, err := range errs {
		require.ErrorIs(t, err, device.ErrInvalidArgument, "rank %d", rank)
		require.ErrorContains(t, err, "2048 bytes on ranks [2]", "rank %d", rank)
		require.ErrorContains(t, err, "4096 bytes on ranks [0 1 3]", "rank %d", rank)
	}
	require.Zero(t, symm.MappedPeers())
	require.Equal(t, baseline.Views, sim.Live().Views, "peer views left")
}

// A rank whose buffer cannot be registered (not device memory, past its
// allocation's end, its export or a mapping failing) fails with its own
// error; every other rank fails with ErrPeer naming it, and nothing stays
// mapped.
func TestWindowFailsEverywhereWhenOneRankFails(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 4}
	const bad = 1
	for _, fail := range []string{"not memory", "past the end", "export", "open"} {
		t.Run(fail, func(t *testing.T) {
			baseline := sim.Live()
			w := simWorld(t, shape, false)
			errs := make([]error, shape.World())
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
				dev := &testDevice{Device: r.Dev}
				p, err := r.Dev.Alloc(4096)
				if err != nil {
					return err
				}
				defer r.Dev.Free(p)
				at := p
				if r.Comm.Rank() == bad {
					switch fail {
					case "not memory":
						at = 0x10
					case "past the end":
						at = p.Add(3072)
					default:
						dev.fail = fail
					}
				}
				win, err := symm.NewWindow(ctx, r.Comm, dev, at, 2048)
				errs[r.Comm.Rank()] = err
				if err == nil {
					return win.Close()
				}
				return nil
			})
			require.NoError(t, err)
			for rank, err := range errs {
				require.Error(t, err, "rank %d", rank)
				if rank == bad {
					require.NotErrorIs(t, err, device.ErrPeer, "rank %d", rank)
					continue
				}
				require.ErrorIs(t, err, device.ErrPeer, "rank %d", rank)
				require.ErrorContains(t, err, fmt.Sprintf("rank %d could not", bad), "rank %d", rank)
			}
			require.Zero(t, symm.MappedPeers())
			require.Equal(t, baseline.Views, sim.Live().Views, "peer views left")
		})
	}
}
