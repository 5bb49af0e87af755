package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

func permit(t *testing.T, d *Device) device.Permit {
	t.Helper()
	p, err := device.AllowMulticast(d, "sim test")
	require.NoError(t, err)
	return p
}

// team sets up a multicast object of size bytes over devs as a collective
// would: the first creates it, the others import it, every device is added,
// then each binds and maps. It returns the handles, the bound (unicast)
// buffers and the multicast addresses, all closed at the end of the test.
func team(t *testing.T, devs []*Device, size int64) ([]device.Multicast, []device.Ptr, []device.Ptr) {
	t.Helper()
	mcs := make([]device.Multicast, len(devs))
	first, err := devs[0].CreateMulticast(permit(t, devs[0]), len(devs), size)
	require.NoError(t, err)
	mcs[0] = first
	handle, err := first.Export()
	require.NoError(t, err)
	for i := 1; i < len(devs); i++ {
		mcs[i], err = devs[i].ImportMulticast(permit(t, devs[i]), handle)
		require.NoError(t, err)
	}
	for _, m := range mcs {
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		require.NoError(t, m.AddDevice())
	}
	local := make([]device.Ptr, len(devs))
	addr := make([]device.Ptr, len(devs))
	for i, m := range mcs {
		require.Equal(t, size, m.Size())
		local[i], err = m.Bind()
		require.NoError(t, err)
	}
	for i, m := range mcs {
		addr[i], err = m.Map()
		require.NoError(t, err)
	}
	return mcs, local, addr
}

// A load-reduce through any device's mapping sees every device's bound
// buffer at the same offset, in the order of the devices' ordinals.
func TestMulticastLoadReduceSeesEveryBoundBuffer(t *testing.T) {
	h := NewHost("mc")
	devs := []*Device{newDevice(t, h, 0, Options{}), newDevice(t, h, 1, Options{}), newDevice(t, h, 2, Options{})}
	const size = 2 * DefaultMulticastGranularity
	_, local, addr := team(t, devs, size)
	for i, d := range devs {
		require.NoError(t, d.CopyToDevice(local[i], bytes.Repeat([]byte{byte(10 + i)}, size)))
	}
	require.NoError(t, devs[1].CopyToDevice(local[1].Add(4096), []byte("peer one")))
	for i := range devs {
		views, err := h.Multimem(addr[i].Add(4096), 16, 16)
		require.NoError(t, err)
		require.Len(t, views, 3)
		require.Equal(t, bytes.Repeat([]byte{10}, 16), views[0])
		require.Equal(t, append([]byte("peer one"), bytes.Repeat([]byte{11}, 8)...), views[1])
		require.Equal(t, bytes.Repeat([]byte{12}, 16), views[2])
	}
	require.NotEqual(t, addr[0], addr[1], "each device maps the object at its own address")

	// Kernels see it through their HostMemory.
	s := openStream(t, devs[0])
	var got [][]byte
	k := &device.Kernel{Name: "mc_probe", Host: func(mem device.HostMemory, _ int, _ []any) error {
		mm, ok := mem.(device.MulticastMemory)
		if !ok {
			return fmt.Errorf("no MulticastMemory: %w", device.ErrNotSupported)
		}
		var err error
		got, err = mm.Multimem(addr[0], 32, 16)
		return err
	}}
	require.NoError(t, devs[0].Launch(s, k, 1))
	require.NoError(t, s.Synchronize(testCtx(t)))
	require.Len(t, got, 3)
}

// The simulated object fails where the hardware does.
func TestMulticastRules(t *testing.T) {
	const g = DefaultMulticastGranularity
	h := NewHost("mc-rules")
	d0, d1 := newDevice(t, h, 0, Options{}), newDevice(t, h, 1, Options{})

	t.Run("no permit", func(t *testing.T) {
		_, err := d0.CreateMulticast(device.Permit{}, 2, g)
		require.ErrorIs(t, err, device.ErrNotSupported)
		_, err = d0.MulticastGranularity(device.Permit{}, 2)
		require.ErrorIs(t, err, device.ErrNotSupported)
	})
	t.Run("granularity", func(t *testing.T) {
		got, err := d0.MulticastGranularity(permit(t, d0), 2)
		require.NoError(t, err)
		require.Equal(t, int64(g), got)
		for _, size := range []int64{0, g - 1, g + 256} {
			_, err := d0.CreateMulticast(permit(t, d0), 2, size)
			require.ErrorIs(t, err, device.ErrInvalidArgument, "size %d", size)
		}
	})
	t.Run("bind before every device is added", func(t *testing.T) {
		m0, err := d0.CreateMulticast(permit(t, d0), 2, g)
		require.NoError(t, err)
		defer m0.Close()
		h0, err := m0.Export()
		require.NoError(t, err)
		m1, err := d1.ImportMulticast(permit(t, d1), h0)
		require.NoError(t, err)
		defer m1.Close()
		_, err = m0.Bind()
		require.ErrorIs(t, err, device.ErrInvalidArgument, "not added yet")
		require.NoError(t, m0.AddDevice())
		require.ErrorIs(t, m0.AddDevice(), device.ErrInvalidArgument, "added twice")
		_, err = m0.Bind()
		require.ErrorContains(t, err, "1 of its 2 devices added")
		require.NoError(t, m1.AddDevice())
		_, err = m0.Bind()
		require.NoError(t, err)
		_, err = m0.Bind()
		require.ErrorIs(t, err, device.ErrInvalidArgument, "bound twice")

		// The load-reduce needs every device bound.
		a0, err := m0.Map()
		require.NoError(t, err)
		_, err = h.Multimem(a0, 16, 16)
		require.ErrorContains(t, err, "has no memory bound")
		_, err = m1.Bind()
		require.NoError(t, err)
		_, err = h.Multimem(a0, 16, 16)
		require.NoError(t, err)
	})
	t.Run("add after a bind", func(t *testing.T) {
		m0, err := d0.CreateMulticast(permit(t, d0), 1, g)
		require.NoError(t, err)
		defer m0.Close()
		require.NoError(t, m0.AddDevice())
		_, err = m0.Bind()
		require.NoError(t, err)
		h0, _ := m0.Export()
		m1, err := d1.ImportMulticast(permit(t, d1), h0)
		require.NoError(t, err)
		defer m1.Close()
		require.ErrorIs(t, m1.AddDevice(), device.ErrInvalidArgument)
	})
	t.Run("accesses", func(t *testing.T) {
		mcs, local, addr := team(t, []*Device{d0, d1}, g)
		_, err := h.Multimem(addr[0].Add(8), 16, 16)
		require.ErrorContains(t, err, "not 16-byte aligned")
		_, err = h.Multimem(addr[0].Add(g-16), 32, 16)
		require.ErrorContains(t, err, "runs past the end")
		_, err = h.Multimem(local[0], 16, 16)
		require.ErrorContains(t, err, "not a multicast address")
		_, err = h.Bytes(addr[0].Add(64), 4)
		require.ErrorContains(t, err, "plain access")
		require.ErrorIs(t, d0.CopyToHost(make([]byte, 4), addr[1]), device.ErrInvalidArgument)

		// A device that closed its hold has no memory bound any more.
		require.NoError(t, mcs[1].Close())
		_, err = h.Multimem(addr[0], 16, 16)
		require.ErrorContains(t, err, "has no memory bound")
	})
	t.Run("another host", func(t *testing.T) {
		other := newDevice(t, NewHost("elsewhere"), 0, Options{})
		m0, err := d0.CreateMulticast(permit(t, d0), 2, g)
		require.NoError(t, err)
		defer m0.Close()
		h0, _ := m0.Export()
		_, err = other.ImportMulticast(permit(t, other), h0)
		require.ErrorIs(t, err, device.ErrNotSupported)
	})
}

// Closing every hold releases the object and the bound memory.
func TestMulticastClosesEverything(t *testing.T) {
	before := Live()
	h := NewHost("mc-close")
	d0 := New(h, 0, Options{})
	d1 := New(h, 1, Options{})
	p0, err := device.AllowMulticast(d0, "test")
	require.NoError(t, err)
	p1, err := device.AllowMulticast(d1, "test")
	require.NoError(t, err)
	m0, err := d0.CreateMulticast(p0, 2, DefaultMulticastGranularity)
	require.NoError(t, err)
	hd, _ := m0.Export()
	m1, err := d1.ImportMulticast(p1, hd)
	require.NoError(t, err)
	require.NoError(t, m0.AddDevice())
	require.NoError(t, m1.AddDevice())
	for _, m := range []device.Multicast{m0, m1} {
		_, err := m.Bind()
		require.NoError(t, err)
		_, err = m.Map()
		require.NoError(t, err)
	}
	require.Equal(t, Counts{Devices: 2, Allocs: 2, Multicasts: 2}, Live().sub(before))
	require.NoError(t, m0.Close())
	require.NoError(t, m0.Close(), "a second Close is a no-op")
	m2, err := d1.ImportMulticast(p1, hd)
	require.NoError(t, err, "the object lives while a device holds it")
	require.NoError(t, m1.Close())
	require.Empty(t, h.mcMaps)
	require.Len(t, h.mcObjects, 1)
	require.NoError(t, m2.Close())
	require.Empty(t, h.mcObjects)
	_, err = d1.ImportMulticast(p1, hd)
	require.ErrorIs(t, err, device.ErrPeer, "gone with its last hold")
	require.NoError(t, d0.Close())
	require.NoError(t, d1.Close())
	require.Equal(t, Counts{}, Live().sub(before))
}
