//go:build cgo

package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/gputest"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// TestMain fails the run when a test left a communicator alive.
func TestMain(m *testing.M) {
	code := m.Run()
	if n := liveComms.Load(); n != 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "nccl: %d communicator(s) not destroyed\n", n)
		code = 1
	}
	os.Exit(code)
}

func TestLoadNamesCandidates(t *testing.T) {
	_, err := load([]string{"/nonexistent/libnccl.so.2", "libhiercoll-no-nccl.so.2"}, []string{"/site/one", "/site/two"})
	require.Error(t, err)
	require.True(t, errors.Is(err, hcerr.ErrNotSupported), "%v", err)
	require.True(t, errors.Is(err, dl.ErrNotFound), "%v", err)
	for _, s := range []string{"/nonexistent/libnccl.so.2", "libhiercoll-no-nccl.so.2", "/site/one", "/site/two", wheelPath} {
		require.ErrorContains(t, err, s)
	}
}

// A Comm rejects bad arguments before calling NCCL, and refuses work once
// destroyed; a zero Comm is a destroyed one.
func TestCommArgumentChecks(t *testing.T) {
	c := &Comm{nranks: 2}
	require.ErrorIs(t, c.ReduceScatter(0x1000, 0x2000, 8, dtype.Invalid, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.ReduceScatter(0x1000, 0x2000, -1, dtype.F32, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.ReduceScatter(0, 0x2000, 8, dtype.F32, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.AllReduce(0x1000, 0, 8, dtype.BF16, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.Send(0x1000, 8, dtype.F32, 2, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.Recv(0x1000, 8, dtype.F32, -1, 0), hcerr.ErrInvalidArgument)
	require.ErrorIs(t, c.ReduceScatter(0x1000, 0x2000, 8, dtype.F32, 0), hcerr.ErrClosed)
	require.ErrorIs(t, c.Send(0x1000, 8, dtype.F32, 1, 0), hcerr.ErrClosed)
	require.ErrorIs(t, c.AsyncError(), hcerr.ErrClosed)
	require.NoError(t, c.Destroy())
}

// gpuSetup loads NCCL and device memory on device 0, or skips with the reason.
func gpuSetup(t *testing.T) (*Lib, *gputest.Mem) {
	t.Helper()
	lib, err := Load()
	if err != nil {
		t.Skipf("no NCCL here: %v", err)
	}
	mem, err := gputest.Open(0)
	if err != nil {
		t.Skipf("no CUDA device here: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, mem.Close()) })
	return lib, mem
}

func singleRankComm(t *testing.T, lib *Lib) *Comm {
	t.Helper()
	id, err := lib.UniqueID()
	require.NoError(t, err)
	comm, err := lib.InitRank(1, id, 0, 0)
	require.NoError(t, err)
	require.Equal(t, 1, comm.Size())
	require.Equal(t, 0, comm.Rank())
	return comm
}

// randomInput fills n elements of d with small integers (exact in every dtype).
func randomInput(d dtype.DType, n int, rng *rand.Rand) []byte {
	b := make([]byte, n*d.Size())
	for i := 0; i < n; i++ {
		d.Put(b, i, float64(rng.IntN(200)-100))
	}
	return b
}

func TestGPUSingleRankCollectives(t *testing.T) {
	lib, mem := gpuSetup(t)
	v, err := lib.Version()
	require.NoError(t, err)
	ma, mi, pa := DecodeVersion(v)
	t.Logf("NCCL %d.%d.%d from %s", ma, mi, pa, lib.Path())

	comm := singleRankComm(t, lib)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range dtype.All {
		for _, n := range []int{1, 1001, 1 << 16} {
			t.Run(fmt.Sprintf("%v/%d", d, n), func(t *testing.T) {
				in := randomInput(d, n, rng)
				size := int64(len(in))
				send, err := mem.Alloc(size)
				require.NoError(t, err)
				defer func() { require.NoError(t, mem.Free(send)) }()
				recv, err := mem.Alloc(size)
				require.NoError(t, err)
				defer func() { require.NoError(t, mem.Free(recv)) }()
				require.NoError(t, mem.ToDevice(send, in))
				out := make([]byte, size)

				// With one rank, reduce-scatter and all-reduce are copies.
				require.NoError(t, comm.ReduceScatter(Ptr(send), Ptr(recv), int64(n), d, 0))
				require.NoError(t, mem.Sync())
				require.NoError(t, mem.ToHost(out, recv))
				require.True(t, bytes.Equal(in, out), "reduce-scatter of one rank equals its input")

				clear(out)
				require.NoError(t, mem.ToDevice(recv, out))
				require.NoError(t, comm.AllReduce(Ptr(send), Ptr(recv), int64(n), d, 0))
				require.NoError(t, mem.Sync())
				require.NoError(t, mem.ToHost(out, recv))
				require.True(t, bytes.Equal(in, out), "all-reduce of one rank equals its input")

				clear(out)
				require.NoError(t, mem.ToDevice(recv, out))
				require.NoError(t, comm.Group(func() error {
					if err := comm.Send(Ptr(send), int64(n), d, 0, 0); err != nil {
						return err
					}
					return comm.Recv(Ptr(recv), int64(n), d, 0, 0)
				}))
				require.NoError(t, mem.Sync())
				require.NoError(t, mem.ToHost(out, recv))
				require.True(t, bytes.Equal(in, out), "a send to oneself arrives")
			})
		}
	}
	require.NoError(t, comm.AsyncError())
	require.Equal(t, int64(1), liveComms.Load())
	require.NoError(t, comm.Destroy())
	require.NoError(t, comm.Destroy(), "Destroy twice is harmless")
	require.ErrorIs(t, comm.AllReduce(0x1000, 0x1000, 1, dtype.F32, 0), hcerr.ErrClosed)
	require.Equal(t, int64(0), liveComms.Load())
}

func TestGPUInitRankBadDevice(t *testing.T) {
	lib, _ := gpuSetup(t)
	id, err := lib.UniqueID()
	require.NoError(t, err)
	_, err = lib.InitRank(1, id, 0, 1<<20)
	var cerr *CUDAError
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "cuDeviceGet", cerr.Call)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Equal(t, int64(0), liveComms.Load())
}
