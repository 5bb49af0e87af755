package nvls_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
	"github.com/seed12530e24/hiercoll/kernels/kerneltest"
)

// mcTeam is lws simulated GPUs of one host with a multicast object of size
// bytes bound on each: local[i] is GPU i's bound buffer, addr[i] the
// object's multicast address on GPU i.
type mcTeam struct {
	devs  []*sim.Device
	mcs   []device.Multicast
	local []device.Ptr
	addr  []device.Ptr
}

func newMCTeam(t *testing.T, lws int, size int64) *mcTeam {
	t.Helper()
	h := sim.NewHost("nvls")
	tm := &mcTeam{}
	g := int64(sim.DefaultMulticastGranularity)
	size = (size + g - 1) / g * g
	for i := 0; i < lws; i++ {
		d := sim.New(h, i, sim.Options{WaitTimeout: time.Minute})
		t.Cleanup(func() { require.NoError(t, d.Close()) })
		tm.devs = append(tm.devs, d)
	}
	var handle []byte
	for i, d := range tm.devs {
		p, err := device.AllowMulticast(d, "kernels test")
		require.NoError(t, err)
		var m device.Multicast
		if i == 0 {
			m, err = d.CreateMulticast(p, lws, size)
			require.NoError(t, err)
			handle, err = m.Export()
		} else {
			m, err = d.ImportMulticast(p, handle)
		}
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		require.NoError(t, m.AddDevice())
		tm.mcs = append(tm.mcs, m)
	}
	for _, m := range tm.mcs {
		local, err := m.Bind()
		require.NoError(t, err)
		addr, err := m.Map()
		require.NoError(t, err)
		tm.local = append(tm.local, local)
		tm.addr = append(tm.addr, addr)
	}
	return tm
}

// The Go twin of the NVLS kernel sums every GPU's bound buffer at the
// multicast address with the reduce's arithmetic: bit for bit the fp32
// reference in local-rank order, int32 wrapping; it writes count elements
// at any alignment of out and nothing past them.
func TestNVLSReduceOnSimMatchesTheReference(t *testing.T) {
	rng := kerneltest.NewRNG(t)
	for _, dt := range dtype.All {
		for _, c := range []struct {
			lws    int
			count  int64
			mcOff  int64 // bytes into the object: a multiple of 16
			outOff int64 // elements into the output buffer: odd is unaligned
		}{
			{1, 1, 0, 0}, {2, 7, 16, 1}, {3, 8, 0, 3}, {4, 129, 4096, 0}, {8, 1000, 48, 5}, {2, 4096, 0, 0},
		} {
			t.Run(fmt.Sprintf("%v/lws%d/count%d/out+%d", dt, c.lws, c.count, c.outOff), func(t *testing.T) {
				es := int64(dt.Size())
				tm := newMCTeam(t, c.lws, c.mcOff+nvls.Padded(dt, c.count))
				src := make([]byte, 0, int64(c.lws)*c.count*es)
				for i, d := range tm.devs {
					data := kerneltest.RandomElems(rng, dt, c.count)
					src = append(src, data...)
					require.NoError(t, d.CopyToDevice(tm.local[i].Add(c.mcOff), data))
				}
				want := kerneltest.ReferenceReduce(dt, src, c.count, c.lws, c.count, -1, nil)
				// Every GPU of the team computes the same sum through its own mapping.
				for i, d := range tm.devs {
					poison := kerneltest.PoisonElems(rng, dt, c.count+c.outOff+3)
					out := kerneltest.Upload(t, d, poison)
					s, err := d.NewStream(device.Normal)
					require.NoError(t, err)
					require.NoError(t, nvls.LaunchReduce(d, s, dt, 4, out.Add(c.outOff*es), tm.addr[i].Add(c.mcOff), c.count))
					require.NoError(t, s.Synchronize(t.Context()))
					require.NoError(t, s.Close())
					got := kerneltest.Download(t, d, out, len(poison))
					kerneltest.RequireSameBits(t, dt, want, got[c.outOff*es:(c.outOff+c.count)*es], "GPU ", i)
					require.Equal(t, poison[:c.outOff*es], got[:c.outOff*es], "written before out")
					require.Equal(t, poison[(c.outOff+c.count)*es:], got[(c.outOff+c.count)*es:], "written past count")
				}
			})
		}
	}
}

// What the hardware would fault on fails the launch or the stream.
func TestNVLSReduceRefusesWhatHardwareWould(t *testing.T) {
	dt := dtype.BF16
	tm := newMCTeam(t, 2, 4096)
	d := tm.devs[0]
	out := kerneltest.Upload(t, d, make([]byte, 4096))
	run := func(mc device.Ptr, count int64) error {
		s, err := d.NewStream(device.Normal)
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		if err := nvls.LaunchReduce(d, s, dt, 1, out, mc, count); err != nil {
			return err
		}
		return s.Synchronize(t.Context())
	}
	require.NoError(t, run(tm.addr[0], 8))
	require.ErrorIs(t, run(tm.addr[0].Add(2), 8), device.ErrInvalidArgument, "a multicast address off the 16-byte vector")
	require.ErrorContains(t, run(tm.addr[0].Add(4096-16), 9), "runs past the end", "the last vector is read whole")
	require.ErrorContains(t, run(tm.local[0], 8), "not a multicast address", "the bound buffer's own address")
	require.NoError(t, tm.mcs[1].Close())
	require.ErrorContains(t, run(tm.addr[0], 8), "has no memory bound", "a GPU of the team unbound")

	// A device whose kernels cannot read multicast addresses.
	s, err := d.NewStream(device.Normal)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	k := nvls.Kernels()[0]
	err = k.Host(plainMemory{}, 1, []any{out, tm.addr[0], int64(8)})
	require.ErrorIs(t, err, device.ErrNotSupported)
}

// plainMemory is a HostMemory without MulticastMemory.
type plainMemory struct{ device.HostMemory }

// The CUDA source uses the load-reduce forms the package documents: fp32
// accumulation for the 16-bit types, integer adds for int32, relaxed at
// system scope; one kernel per dtype.
func TestNVLSSourceForms(t *testing.T) {
	src := nvls.Module.Source
	for _, form := range []string{
		"multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2",
		"multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2",
		"multimem.ld_reduce.relaxed.sys.global.add.v4.f32",
		"multimem.ld_reduce.relaxed.sys.global.add.u32",
	} {
		require.Contains(t, src, form)
	}
	require.NotRegexp(t, `(?m)^\s*#\s*include`, src, "NVRTC programs here are header-free")
	for _, k := range nvls.Kernels() {
		require.Contains(t, src, fmt.Sprintf("extern \"C\" __global__ void %s(", k.Name))
	}
}
