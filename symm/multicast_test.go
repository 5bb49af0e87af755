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

// Every node of a 2 × 3 world gets its own object: a load-reduce through
// any rank's address sees exactly its node's three bound buffers, in local
// rank order.
func TestNewMulticastOneObjectPerNode(t *testing.T) {
	shape := bootstrap.Shape{Nodes: 2, LocalSize: 3}
	w := simWorld(t, shape, true)
	const size = 5000 // rounded up to the granularity
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
		place, err := symm.PlaceOf(r.Comm)
		if err != nil {
			return err
		}
		permit, err := device.AllowMulticast(r.Dev, "symm test")
		if err != nil {
			return err
		}
		m, err := symm.NewMulticast(ctx, r.Comm, r.Dev, permit, place.NodeTeam(), size)
		if err != nil {
			return err
		}
		defer m.Close()
		if m.Size%sim.DefaultMulticastGranularity != 0 || m.Size < size {
			return fmt.Errorf("size %d: not %d rounded up to the granularity", m.Size, size)
		}
		if err := r.Dev.CopyToDevice(m.Local, bytes.Repeat([]byte{byte(r.Comm.Rank())}, int(m.Size))); err != nil {
			return err
		}
		if err := r.Comm.Barrier(ctx); err != nil {
			return err
		}
		views, err := r.Dev.(*sim.Device).Host().Multimem(m.Addr.Add(m.Size-16), 16, 16)
		if err != nil {
			return err
		}
		for lr, v := range views {
			if want := bytes.Repeat([]byte{byte(place.NodePeer(lr))}, 16); !bytes.Equal(v, want) {
				return fmt.Errorf("view %d is %v, want rank %d's bytes", lr, v, place.NodePeer(lr))
			}
		}
		if len(views) != shape.LocalSize {
			return fmt.Errorf("%d views, want %d", len(views), shape.LocalSize)
		}
		return r.Comm.Barrier(ctx) // nobody closes while a peer still reads
	})
	require.NoError(t, err)
}

// One rank without a permit makes every rank fail, and nothing stays
// created, bound or mapped anywhere.
func TestNewMulticastFailsEverywhereWhenOneRankFails(t *testing.T) {
	for _, bad := range []int{0, 2} { // the creator, another rank
		t.Run(fmt.Sprintf("rank%d", bad), func(t *testing.T) {
			before := sim.Live()
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
			w := simWorld(t, shape, true)
			errs := make([]error, shape.World())
			err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) error {
				place, _ := symm.PlaceOf(r.Comm)
				var permit device.Permit
				if r.Comm.Rank() != bad {
					var err error
					if permit, err = device.AllowMulticast(r.Dev, "symm test"); err != nil {
						return err
					}
				}
				m, err := symm.NewMulticast(ctx, r.Comm, r.Dev, permit, place.NodeTeam(), 4096)
				errs[r.Comm.Rank()] = err
				if err == nil {
					return m.Close()
				}
				return nil
			})
			require.NoError(t, err)
			for rank, err := range errs {
				require.ErrorIs(t, err, device.ErrNotSupported, "rank %d", rank)
				if rank != bad {
					require.ErrorIs(t, err, device.ErrPeer, "rank %d hears of rank %d's failure", rank, bad)
				}
			}
			after := sim.Live()
			require.Equal(t, before.Multicasts, after.Multicasts, "no multicast object left")
			require.Equal(t, before.Allocs, after.Allocs, "no bound memory left")
		})
	}
}
