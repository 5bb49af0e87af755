//go:build cgo

package nvshmem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/seed12530e24/hiercoll/device"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/gputest"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// TestMain fails the run when a test left symmetric memory allocated or
// NVSHMEM initialised.
func TestMain(m *testing.M) {
	code := m.Run()
	if l := loaded; l != nil && code == 0 {
		if n := l.Live(); n != 0 {
			fmt.Fprintf(os.Stderr, "nvshmem: %d symmetric allocation(s) not freed\n", n)
			code = 1
		}
		if l.MyPE() >= 0 {
			fmt.Fprintln(os.Stderr, "nvshmem: not finalized")
			code = 1
		}
	}
	os.Exit(code)
}

// The Go packing and the C structs (whose layout the C side also asserts at
// compile time) agree.
func TestCLayoutMatchesGo(t *testing.T) {
	require.Equal(t, [11]int{
		initAttrSize, offAttrVersion, offAttrMPIComm, offArgsVersion, offUIDArgsVersion,
		offUIDArgsID, offUIDArgsMyRank, offUIDArgsNRanks, offCUDADeviceID, offArgsReserved, UniqueIDSize,
	}, cAttrLayout())
}

func TestLoadNamesCandidates(t *testing.T) {
	_, err := load([]string{"/nonexistent/libnvshmem_host.so.3", "libhiercoll-no-nvshmem.so.3"}, []string{"/site/one"})
	require.Error(t, err)
	require.True(t, errors.Is(err, hcerr.ErrNotSupported), "%v", err)
	require.True(t, errors.Is(err, dl.ErrNotFound), "%v", err)
	for _, s := range []string{"/nonexistent/libnvshmem_host.so.3", "libhiercoll-no-nvshmem.so.3", "/site/one", wheelPath} {
		require.ErrorContains(t, err, s)
	}
}

// Before Init every call fails cleanly instead of reaching NVSHMEM, which
// would end the process.
func TestCallsBeforeInit(t *testing.T) {
	l := &Lib{}
	_, err := l.Malloc(64)
	require.ErrorIs(t, err, hcerr.ErrClosed)
	require.ErrorIs(t, l.Free(0x1000), hcerr.ErrClosed)
	require.ErrorIs(t, l.PutOnStream(0x1000, 0x2000, 8, 0, 0), hcerr.ErrClosed)
	require.ErrorIs(t, l.PutSignalOnStream(0x1000, 0x2000, 8, 0x3000, 1, SignalSet, 0, 0), hcerr.ErrClosed)
	require.ErrorIs(t, l.SignalWaitUntilOnStream(0x3000, CmpEQ, 1, 0), hcerr.ErrClosed)
	require.ErrorIs(t, l.BarrierAllOnStream(0), hcerr.ErrClosed)
	require.Equal(t, -1, l.MyPE())
	require.Equal(t, 0, l.NPEs())
	require.Equal(t, -1, l.TeamMyPE(TeamNode))
	require.Equal(t, Ptr(0), l.Ptr(0x1000, 0))
	require.NoError(t, l.Finalize())

	_, err = l.Malloc(0)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorIs(t, l.PutSignalOnStream(0x1000, 0x2000, 8, 0x3000, 1, SignalOp(3), 0, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, l.SignalWaitUntilOnStream(0x3000, Cmp(6), 1, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, l.Init(1, 1, make([]byte, UniqueIDSize), 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, l.Init(0, 1, make([]byte, 127), 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, l.Init(0, 1, make([]byte, UniqueIDSize), -1), hcerr.ErrInvalidArgument)
}

// Puts and signals are checked against the symmetric allocations.
func TestHeapChecks(t *testing.T) {
	l := &Lib{ready: true, nranks: 2, allocs: map[Ptr]int64{0x10000: 4096, 0x20000: 64}}
	const put = "put"
	require.NoError(t, l.checkPutLocked(put, 0x10000, 0x90000, 4096, 1))
	require.NoError(t, l.checkPutLocked(put, 0x10800, 0x90000, 2048, 0))
	require.NoError(t, l.checkPutLocked(put, 0x99999, 0, 0, 0), "an empty put needs no buffers")
	require.ErrorIs(t, l.checkPutLocked(put, 0x10000, 0x90000, 4097, 1), hcerr.ErrInvalidArgument, "overruns")
	require.ErrorIs(t, l.checkPutLocked(put, 0x30000, 0x90000, 8, 1), hcerr.ErrInvalidArgument, "not symmetric")
	require.ErrorIs(t, l.checkPutLocked(put, 0x10000, 0x90000, 8, 2), hcerr.ErrInvalidArgument, "PE out of range")
	require.ErrorIs(t, l.checkPutLocked(put, 0x10000, 0, 8, 1), hcerr.ErrInvalidArgument, "null source")
	require.ErrorIs(t, l.checkPutLocked(put, 0x10000, 0x90000, -1, 1), hcerr.ErrInvalidArgument)
	require.NoError(t, l.checkSignalLocked(put, 0x20038))
	require.ErrorIs(t, l.checkSignalLocked(put, 0x20040), hcerr.ErrInvalidArgument, "past the end")
	require.ErrorIs(t, l.checkSignalLocked(put, 0x20004), hcerr.ErrInvalidArgument, "unaligned")
	require.ErrorIs(t, l.Free(0x10008), hcerr.ErrInvalidArgument, "not an allocation's base")
}

// TestGPUSinglePE runs NVSHMEM with one PE on device 0: symmetric memory, a
// put with signal to itself, a wait on the signal and a barrier.
func TestGPUSinglePE(t *testing.T) {
	lib, err := Load()
	if err != nil {
		t.Skipf("no NVSHMEM here: %v", err)
	}
	mem, err := gputest.Open(0)
	if err != nil {
		t.Skipf("no CUDA device here: %v", err)
	}
	defer func() { require.NoError(t, mem.Close()) }()
	if maj, min, patch, err := lib.Version(); err == nil {
		t.Logf("NVSHMEM %d.%d.%d from %s (plugin %q)", maj, min, patch, lib.File(), lib.plugin)
	}
	// One PE on one host: a small heap, no network transport, the
	// bootstrap on loopback, NVLink multicast off.
	for k, v := range map[string]string{
		"NVSHMEM_SYMMETRIC_SIZE":            "256M",
		"NVSHMEM_REMOTE_TRANSPORT":          "none",
		"NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME": "lo",
		"NVSHMEM_DISABLE_NVLS":              "1",
	} {
		t.Setenv(k, v)
	}

	uid, err := lib.UniqueID()
	require.NoError(t, err)
	require.Len(t, uid, UniqueIDSize)
	require.NoError(t, lib.Init(0, 1, uid, 0))
	defer func() { require.NoError(t, lib.Finalize()) }()
	require.Equal(t, 0, lib.MyPE())
	require.Equal(t, 1, lib.NPEs())
	require.Equal(t, 0, lib.TeamMyPE(TeamNode))
	require.Equal(t, 1, lib.TeamNPEs(TeamWorld))
	require.ErrorIs(t, lib.Init(0, 1, uid, 0), hcerr.ErrInvalidArgument, "twice")

	const n = 1 << 20
	src, err := lib.Malloc(n)
	require.NoError(t, err)
	dst, err := lib.Malloc(n)
	require.NoError(t, err)
	sig, err := lib.Malloc(16)
	require.NoError(t, err)
	require.Equal(t, 3, lib.Live())
	require.Equal(t, dst, lib.Ptr(dst, 0), "one's own copy is addressable at its own address")

	in := make([]byte, n)
	for i := range in {
		in[i] = byte(i*7 + 3)
	}
	require.NoError(t, mem.ToDevice(device.Ptr(src), in))
	require.NoError(t, mem.ToDevice(device.Ptr(dst), make([]byte, n)))
	require.NoError(t, mem.ToDevice(device.Ptr(sig), make([]byte, 16)))

	require.NoError(t, lib.PutSignalOnStream(dst, src, n/2, sig, 1, SignalSet, 0, 0))
	require.NoError(t, lib.SignalWaitUntilOnStream(sig, CmpEQ, 1, 0))
	require.NoError(t, lib.PutOnStream(dst+n/2, src+n/2, n/2, 0, 0))
	require.NoError(t, lib.PutSignalOnStream(dst, src, 0, sig+8, 5, SignalAdd, 0, 0))
	require.NoError(t, lib.SignalWaitUntilOnStream(sig+8, CmpGE, 5, 0))
	require.NoError(t, lib.BarrierAllOnStream(0))
	require.NoError(t, mem.Sync())

	out := make([]byte, n)
	require.NoError(t, mem.ToHost(out, device.Ptr(dst)))
	require.True(t, bytes.Equal(in, out), "the puts arrived")
	words := make([]byte, 16)
	require.NoError(t, mem.ToHost(words, device.Ptr(sig)))
	require.Equal(t, uint64(1), binary.LittleEndian.Uint64(words[0:]))
	require.Equal(t, uint64(5), binary.LittleEndian.Uint64(words[8:]))

	for _, p := range []Ptr{src, dst, sig} {
		require.NoError(t, lib.Free(p))
	}
	require.Equal(t, 0, lib.Live())
}
