package internode

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/native/nvshmem"
	"github.com/seed12530e24/hiercoll/symm"
)

// Widened epochs grow with every call, across the wrap of the 32-bit
// counter (rs2d skips 0 there), and repeated or slightly older epochs keep
// their value; two clocks that see the same epochs agree.
func TestEpochClockWidensAcrossTheWrap(t *testing.T) {
	var a epochClock
	require.EqualValues(t, 1, a.widen(1))
	require.EqualValues(t, 1, a.widen(1))
	require.EqualValues(t, 2, a.widen(2))
	require.EqualValues(t, 1, a.widen(1), "an older epoch keeps its value")
	require.EqualValues(t, 2, a.widen(2))

	// A long job: two clocks (two ranks) that start near the wrap.
	var b epochClock
	a = epochClock{}
	var prev uint64
	e := uint32(math.MaxUint32 - 3)
	first := true
	for i := 0; i < 10; i++ {
		wa, wb := a.widen(e), b.widen(e)
		if first {
			first = false
		} else {
			require.Greater(t, wa, prev, "epoch %d", e)
			require.Equal(t, wa, wb, "epoch %d", e)
		}
		prev = wa
		e++
		if e == 0 {
			e++
		}
	}
	require.Greater(t, prev, uint64(math.MaxUint32), "the widened epoch passed 2^32")

	var c epochClock
	require.EqualValues(t, math.MaxUint32, c.widen(math.MaxUint32), "the first epoch is taken as it is")
	require.EqualValues(t, uint64(math.MaxUint32)+2, c.widen(1))
}

func hellos(n int) []shmemHello {
	hs := make([]shmemHello, n)
	for r := range hs {
		hs[r] = shmemHello{host: "h", pid: 100 + r}
	}
	hs[0].uid = bytes.Repeat([]byte{7}, nvshmem.UniqueIDSize)
	return hs
}

func TestPlanShmem(t *testing.T) {
	plan, err := planShmem(hellos(4))
	require.NoError(t, err)
	require.Equal(t, shmemPlan{uid: hellos(1)[0].uid, oneHost: true}, plan)

	hs := hellos(4)
	hs[3].host = "other"
	plan, err = planShmem(hs)
	require.NoError(t, err)
	require.False(t, plan.oneHost)
	require.True(t, plan.stage, "across hosts the sends are staged")

	hs = hellos(4)
	hs[2].stage = true
	plan, err = planShmem(hs)
	require.NoError(t, err)
	require.True(t, plan.stage, "one rank asking stages for all")

	hs = hellos(4)
	hs[3].pid = hs[1].pid
	_, err = planShmem(hs)
	require.ErrorIs(t, err, device.ErrNotSupported)
	require.ErrorContains(t, err, "ranks 1 and 3 share process")

	hs = hellos(3)
	hs[2].up = true
	_, err = planShmem(hs)
	require.ErrorIs(t, err, device.ErrPeer)
	require.ErrorContains(t, err, "rank 2 but not in that of rank 0")

	hs = hellos(3)
	for r := range hs {
		hs[r].up, hs[r].uid = true, nil
	}
	plan, err = planShmem(hs)
	require.NoError(t, err)
	require.True(t, plan.up)
	require.Nil(t, plan.uid)

	hs = hellos(2)
	hs[0].uid = hs[0].uid[:5]
	_, err = planShmem(hs)
	require.ErrorIs(t, err, device.ErrPeer)
}

func TestShmemHelloRoundTrip(t *testing.T) {
	for _, h := range []shmemHello{
		{host: "gpu-node-17.example", pid: 4242, up: true},
		{host: "", pid: 1, stage: true, uid: bytes.Repeat([]byte{9}, nvshmem.UniqueIDSize)},
	} {
		got, err := decodeShmemHello(h.encode())
		require.NoError(t, err)
		require.Equal(t, h, got)
	}
	_, err := decodeShmemHello([]byte{1, 2, 3})
	require.ErrorIs(t, err, device.ErrPeer)
	b := shmemHello{host: "abc"}.encode()
	_, err = decodeShmemHello(b[:len(b)-1])
	require.ErrorIs(t, err, device.ErrPeer)
}

func TestShmemLayout(t *testing.T) {
	l := newShmemLayout(3, 1000, false)
	require.EqualValues(t, symm.Align, l.recv[0], "3 signal words, padded")
	require.EqualValues(t, symm.Align+3072, l.recv[1], "3000 bytes, padded")
	require.Zero(t, l.stage)
	require.EqualValues(t, symm.Align+2*3072, l.size)

	l = newShmemLayout(2, 4096, true)
	require.EqualValues(t, symm.Align+2*8192, l.stage)
	require.EqualValues(t, symm.Align+3*8192, l.size)
	for _, off := range append(l.recv[:], l.stage) {
		require.Zero(t, off%8)
	}
}

func TestSymmetricHeapFor(t *testing.T) {
	const gib = int64(1) << 30
	require.Equal(t, gib, symmetricHeapFor(1<<20), "never below NVSHMEM's default")
	require.Equal(t, gib, symmetricHeapFor(700<<20))
	require.Equal(t, 2*gib, symmetricHeapFor(800<<20), "800 MiB + 200 MiB + 128 MiB")
	need := int64(5<<30 + 12345)
	got := symmetricHeapFor(need)
	require.Zero(t, got%gib)
	require.GreaterOrEqual(t, got, need+need/4+128<<20)
}

func TestShmemEnvLeavesWhatTheUserSet(t *testing.T) {
	env := map[string]string{}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	set := func(k, v string) error { env[k] = v; return nil }

	size, err := shmemEnv(3<<30, true, "", lookup, set)
	require.NoError(t, err)
	require.Equal(t, "4G", size, "3 GiB + 0.75 GiB + 128 MiB → 4 GiB")
	require.Equal(t, "4G", env[envSymmetricSize])
	require.Equal(t, "none", env[envRemoteTransport])

	// A restart for a larger transport raises the size this package set.
	size, err = shmemEnv(6<<30, true, "4G", lookup, set)
	require.NoError(t, err)
	require.Equal(t, "8G", size)
	require.Equal(t, "8G", env[envSymmetricSize])

	env = map[string]string{envSymmetricSize: "20G"}
	size, err = shmemEnv(3<<30, false, "4G", lookup, set)
	require.NoError(t, err)
	require.Empty(t, size)
	require.Equal(t, "20G", env[envSymmetricSize])
	_, ok := env[envRemoteTransport]
	require.False(t, ok, "across hosts NVSHMEM picks its network transport")

	env = map[string]string{envRemoteTransport: "ibgda"}
	size, err = shmemEnv(1, true, "", lookup, set)
	require.NoError(t, err)
	require.Equal(t, "1G", size)
	require.Equal(t, "ibgda", env[envRemoteTransport])
}
