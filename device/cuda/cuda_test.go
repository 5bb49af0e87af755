package cuda_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
)

var _ device.Device = (*cuda.Device)(nil)

// openDevice opens GPU 0 with a private kernel cache, or skips the test with
// the reason when there is no usable CUDA driver. At the end of the test it
// checks that everything the test took was given back, then closes.
func openDevice(t *testing.T) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() {
		live := d.Live()
		live.Modules = 0 // the device's own, released by Close
		assert.Equal(t, cuda.LiveCounts{}, live, "resources left behind on %s", d.Name())
		assert.NoError(t, d.Close())
		assert.NoError(t, d.Close(), "a second Close is a no-op")
	})
	return d
}

// skipWithoutNVRTC skips when err says NVRTC cannot be loaded.
func skipWithoutNVRTC(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no NVRTC: %v", err)
	}
}

func newStream(t *testing.T, d *cuda.Device, p device.Priority) device.Stream {
	t.Helper()
	s, err := d.NewStream(p)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

func alloc(t *testing.T, d *cuda.Device, size int64) device.Ptr {
	t.Helper()
	p, err := d.Alloc(size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, d.Free(p)) })
	return p
}

func syncStream(t *testing.T, s device.Stream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, s.Synchronize(ctx))
}

func readWords(t *testing.T, d *cuda.Device, p device.Ptr, n int) []uint32 {
	t.Helper()
	b := make([]byte, 4*n)
	require.NoError(t, d.CopyToHost(b, p))
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func writeWord(t *testing.T, d *cuda.Device, p device.Ptr, v uint32) {
	t.Helper()
	require.NoError(t, d.CopyToDevice(p, binary.LittleEndian.AppendUint32(nil, v)))
}

// releaseOnCleanup writes v to word from stream s when the test ends (before
// the word is freed: cleanups run last-registered first), so that a failed
// assertion never leaves a stream blocked in a wait, which would make
// cuMemFree and the context release wait forever.
func releaseOnCleanup(t *testing.T, d *cuda.Device, s device.Stream, word device.Ptr, v uint32) {
	t.Cleanup(func() {
		assert.NoError(t, d.WriteValue32(s, word, v))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, s.Synchronize(ctx))
	})
}

// TestOpenWithoutDriver runs where there is no CUDA driver (this is what CI
// and machines without GPUs see): Open and Count fail with
// device.ErrNotSupported and say why.
func TestOpenWithoutDriver(t *testing.T) {
	d, err := cuda.Open(0, cuda.Options{})
	if err == nil {
		require.NoError(t, d.Close())
		t.Skip("a CUDA driver and device are present")
	}
	if !strings.Contains(err.Error(), "cuda: no CUDA driver: libcuda.so.1") {
		t.Skipf("a CUDA driver is present but Open failed otherwise: %v", err)
	}
	require.ErrorIs(t, err, device.ErrNotSupported)
	t.Logf("Open: %v", err)
	_, err = cuda.Count()
	require.ErrorIs(t, err, device.ErrNotSupported)
	_, err = cuda.Probe()
	require.ErrorIs(t, err, device.ErrNotSupported)
}

func TestInfo(t *testing.T) {
	d := openDevice(t)
	info := d.Info()
	require.Equal(t, "cuda", info.Backend)
	require.Equal(t, 0, info.Ordinal)
	require.NotEmpty(t, info.Model)
	require.Positive(t, info.SMs)
	require.Positive(t, info.CopyEngines)
	require.NotEmpty(t, info.HostID)
	require.Regexp(t, `^sm_[0-9]+$`, d.Arch())
	require.Contains(t, d.Name(), "cuda:0")
	n, err := cuda.Count()
	require.NoError(t, err)
	require.Positive(t, n)
	t.Logf("%s: %d SMs, %d copy engines, %s, multicast %v, %d device(s)", d.Name(), info.SMs, info.CopyEngines, d.Arch(), info.Multicast, n)
}

func TestAllocCopyRoundTrip(t *testing.T) {
	d := openDevice(t)
	for _, size := range []int64{1, 255, 4096, 1<<20 + 3} {
		p := alloc(t, d, size)
		require.Zero(t, uint64(p)%256, "allocations are 256-byte aligned")
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(rand.Uint32())
		}
		require.NoError(t, d.CopyToDevice(p, src))
		dst := make([]byte, size)
		require.NoError(t, d.CopyToHost(dst, p))
		require.True(t, bytes.Equal(src, dst), "round trip of %d bytes", size)
	}
	require.Equal(t, 4, d.Live().Allocs)

	_, err := d.Alloc(0)
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorIs(t, d.Free(device.Ptr(0x1234)), device.ErrInvalidArgument)
	require.NoError(t, d.CopyToDevice(0, nil), "empty copies do nothing")
}

func TestDeviceCopyOnStream(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.Normal)
	const n = 3<<20 + 5
	a, b := alloc(t, d, n), alloc(t, d, n)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	require.NoError(t, d.CopyToDevice(a, src))
	require.NoError(t, d.Copy(s, b.Add(1), a, n-1))
	require.NoError(t, d.Copy(s, b, a, 0))
	syncStream(t, s)
	dst := make([]byte, n)
	require.NoError(t, d.CopyToHost(dst, b))
	require.Equal(t, src[:n-1], dst[1:])
	require.ErrorIs(t, d.Copy(s, b, a, -1), device.ErrInvalidArgument)
}

func TestMemset32(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.Normal)
	p := alloc(t, d, 4*1000)
	require.NoError(t, d.Memset32(s, p, 0, 1000))
	require.NoError(t, d.Memset32(s, p.Add(4*10), 0xdeadbeef, 990))
	syncStream(t, s)
	w := readWords(t, d, p, 1000)
	for i, v := range w {
		want := uint32(0xdeadbeef)
		if i < 10 {
			want = 0
		}
		require.Equal(t, want, v, "word %d", i)
	}
	require.ErrorIs(t, d.Memset32(s, p.Add(2), 1, 1), device.ErrInvalidArgument)
}

func TestAddressRange(t *testing.T) {
	d := openDevice(t)
	const size = 10000
	p := alloc(t, d, size)
	for _, off := range []int64{0, 1, 4096, size - 1} {
		base, n, err := d.AddressRange(p.Add(off))
		require.NoError(t, err)
		require.Equal(t, p, base, "offset %d", off)
		require.GreaterOrEqual(t, n, int64(size))
	}
}

var testModule = &device.Module{
	Name: "hiercoll_cuda_test",
	Source: `
extern "C" __global__ void hc_test_args(unsigned long long *out, int a, unsigned int b,
                                        long long c, unsigned long long d, float e) {
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		union { float f; unsigned int u; } bits;
		bits.f = e;
		out[0] = (unsigned long long)(long long)a;
		out[1] = b;
		out[2] = (unsigned long long)c;
		out[3] = d;
		out[4] = bits.u;
		out[5] = gridDim.x;
		out[6] = blockDim.x;
	}
}

extern "C" __global__ void hc_test_fill(unsigned int *out, unsigned int n, unsigned int base) {
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		out[i] = base + i;
	}
}
`,
}

var (
	argsKernel = &device.Kernel{Module: testModule, Name: "hc_test_args", Block: 32}
	fillKernel = &device.Kernel{Module: testModule, Name: "hc_test_fill", Block: 128}
)

func TestLaunchArgumentTypes(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.Normal)
	out := alloc(t, d, 8*8)
	err := d.Launch(s, argsKernel, 3, out, int32(-7), uint32(0xfedcba98), int64(-1234567890123), uint64(0x8000000000000001), float32(1.5))
	skipWithoutNVRTC(t, err)
	require.NoError(t, err)
	syncStream(t, s)
	b := make([]byte, 8*7)
	require.NoError(t, d.CopyToHost(b, out))
	got := make([]uint64, 7)
	for i := range got {
		got[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	m7 := int64(-7)
	c := int64(-1234567890123)
	require.Equal(t, []uint64{uint64(m7), 0xfedcba98, uint64(c), 0x8000000000000001, uint64(math.Float32bits(1.5)), 3, 32}, got)

	require.ErrorIs(t, d.Launch(s, argsKernel, 1, out, 7), device.ErrInvalidArgument, "int is not a kernel argument type")
	require.ErrorIs(t, d.Launch(s, argsKernel, 0, out), device.ErrInvalidArgument)
}

func TestLaunchGrid(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.High)
	const n = 1000
	out := alloc(t, d, 4*n)
	err := d.Launch(s, fillKernel, (n+127)/128, out, uint32(n), uint32(100))
	skipWithoutNVRTC(t, err)
	require.NoError(t, err)
	syncStream(t, s)
	for i, v := range readWords(t, d, out, n) {
		require.Equal(t, uint32(100+i), v, "element %d", i)
	}
	require.Equal(t, 1, d.Live().Modules)
}

// TestWaitWriteValue: stream A waits on a word until stream B writes it.
func TestWaitWriteValue(t *testing.T) {
	d := openDevice(t)
	a, b := newStream(t, d, device.Normal), newStream(t, d, device.Normal)
	mem := alloc(t, d, 256)
	word, marker := mem, mem.Add(4)
	require.NoError(t, d.CopyToDevice(mem, make([]byte, 8)))
	releaseOnCleanup(t, d, b, word, 7)

	require.NoError(t, d.WaitValue32(a, device.Word{Addr: word, Label: "test word"}, device.EQ, 7))
	require.NoError(t, d.Memset32(a, marker, 1, 1))
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, uint32(0), readWords(t, d, marker, 1)[0], "the wait holds stream A back")

	require.NoError(t, d.WriteValue32(b, word, 6))
	syncStream(t, b)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, uint32(0), readWords(t, d, marker, 1)[0], "6 is not 7")

	require.NoError(t, d.WriteValue32(b, word, 7))
	syncStream(t, a)
	require.Equal(t, []uint32{7, 1}, readWords(t, d, mem, 2))

	require.ErrorIs(t, d.WaitValue32(a, device.Word{Addr: word.Add(2)}, device.EQ, 1), device.ErrInvalidArgument)
	require.ErrorIs(t, d.WaitValue32(a, device.Word{Addr: word}, device.Cmp(3), 1), device.ErrNotSupported)
}

// TestWaitValueGEQIsCyclic checks GEQ against device.Cmp.Holds:
// (int32)(*addr - v) >= 0.
func TestWaitValueGEQIsCyclic(t *testing.T) {
	d := openDevice(t)
	a, b := newStream(t, d, device.Normal), newStream(t, d, device.Normal)
	word := alloc(t, d, 4)
	w := device.Word{Addr: word, Label: "cyclic word"}
	releaseOnCleanup(t, d, b, word, 0x7fffffff)

	// Already satisfied, including across the wrap-around.
	for _, c := range []struct{ have, want uint32 }{{10, 5}, {5, 5}, {3, 0xfffffffe}} {
		require.True(t, device.GEQ.Holds(c.have, c.want))
		writeWord(t, d, word, c.have)
		require.NoError(t, d.WaitValue32(a, w, device.GEQ, c.want))
		syncStream(t, a)
	}

	// 0xfffffff0 is "before" 5 cyclically: blocks until 0x10 arrives.
	require.False(t, device.GEQ.Holds(0xfffffff0, 5))
	writeWord(t, d, word, 0xfffffff0)
	require.NoError(t, d.WaitValue32(a, w, device.GEQ, 5))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, a.Synchronize(ctx), device.ErrTimeout)
	require.NoError(t, d.WriteValue32(b, word, 0x10))
	syncStream(t, a)
}

// TestSynchronizeTimesOut: a stream blocked by a wait nobody satisfies does
// not hang the host; a write from another stream then releases it.
func TestSynchronizeTimesOut(t *testing.T) {
	d := openDevice(t)
	a, b := newStream(t, d, device.Normal), newStream(t, d, device.Normal)
	word := alloc(t, d, 4)
	writeWord(t, d, word, 0)
	releaseOnCleanup(t, d, b, word, 1)
	require.NoError(t, d.WaitValue32(a, device.Word{Addr: word, Label: "never written"}, device.EQ, 1))
	ev, err := d.NewEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, ev.Close()) }()
	require.NoError(t, ev.Record(a))

	const bound = 200 * time.Millisecond
	start := time.Now() // before the deadline is set, so took cannot read short of it
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	err = a.Synchronize(ctx)
	took := time.Since(start)
	var te *device.TimeoutError
	require.ErrorAs(t, err, &te)
	require.ErrorIs(t, err, device.ErrTimeout)
	require.Equal(t, "stream synchronize", te.What)
	require.GreaterOrEqual(t, took, bound-time.Millisecond)
	require.Less(t, took, bound+time.Second, "the host wait ends near its bound")
	t.Logf("timed out after %v: %v", took, err)

	done, err := ev.Done()
	require.NoError(t, err)
	require.False(t, done)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, ev.Synchronize(ctx2), device.ErrTimeout)

	canceled, cancel3 := context.WithCancel(context.Background())
	cancel3()
	err = a.Synchronize(canceled)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, device.ErrTimeout)

	require.NoError(t, d.WriteValue32(b, word, 1))
	syncStream(t, a)
	ctx4, cancel4 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel4()
	require.NoError(t, ev.Synchronize(ctx4))
}

func TestEventsTiming(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.Normal)
	const words = 16 << 20
	p := alloc(t, d, 4*words)
	start, err := d.NewTimedEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, start.Close()) }()
	end, err := d.NewTimedEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, end.Close()) }()
	untimed, err := d.NewEvent()
	require.NoError(t, err)
	defer func() { require.NoError(t, untimed.Close()) }()

	done, err := end.Done()
	require.NoError(t, err)
	require.True(t, done, "an event never recorded is complete")

	require.NoError(t, start.Record(s))
	for range 4 {
		require.NoError(t, d.Memset32(s, p, 0x01010101, words))
	}
	require.NoError(t, end.Record(s))
	require.NoError(t, untimed.Record(s))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, end.Synchronize(ctx))
	done, err = end.Done()
	require.NoError(t, err)
	require.True(t, done)
	elapsed, err := end.Since(start)
	require.NoError(t, err)
	_, err = untimed.Since(start)
	require.ErrorIs(t, err, device.ErrInvalidArgument, "an event made by NewEvent cannot time")
	require.Positive(t, elapsed)
	require.Less(t, elapsed, 10*time.Second)
	t.Logf("4 memsets of %d MiB: %v (%.1f GB/s)", 4*words>>20, elapsed, 4*4*words/elapsed.Seconds()/1e9)

	// Another stream orders itself after the event.
	s2 := newStream(t, d, device.High)
	require.NoError(t, s2.WaitEvent(end))
	require.NoError(t, d.Memset32(s2, p, 2, 1))
	syncStream(t, s2)
	require.Equal(t, uint32(2), readWords(t, d, p, 1)[0])
}

func TestStreamFromHandle(t *testing.T) {
	d := openDevice(t)
	s := newStream(t, d, device.Normal)
	require.NotZero(t, s.Handle())
	w, err := d.StreamFromHandle(s.Handle())
	require.NoError(t, err)
	require.Equal(t, s.Handle(), w.Handle())
	p := alloc(t, d, 16)
	require.NoError(t, d.Memset32(w, p, 9, 4))
	syncStream(t, w)
	require.NoError(t, w.Close())
	require.ErrorIs(t, d.Memset32(w, p, 1, 1), device.ErrClosed)
	// The wrapped stream lives on.
	require.NoError(t, d.Memset32(s, p, 5, 1))
	syncStream(t, s)
	require.Equal(t, []uint32{5, 9, 9, 9}, readWords(t, d, p, 4))
}

func TestCompileErrorShowsLog(t *testing.T) {
	d := openDevice(t)
	bad := &device.Module{Name: "hiercoll_bad", Source: `
extern "C" __global__ void broken(int *out) {
	out[0] = undefined_thing;
}
`}
	err := d.Compile(bad)
	skipWithoutNVRTC(t, err)
	require.Error(t, err)
	require.Contains(t, err.Error(), "undefined_thing", "the NVRTC log is in the error")
	require.Contains(t, err.Error(), "hiercoll_bad")
	t.Logf("%v", err)
}

func TestKernelDiskCache(t *testing.T) {
	dir := t.TempDir()
	mod := &device.Module{Name: "hiercoll_cache_test", Source: testModule.Source + "\n// cache test\n"}

	first, err := cuda.Open(0, cuda.Options{KernelCacheDir: dir})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	err = first.Compile(mod)
	if errors.Is(err, device.ErrNotSupported) {
		require.NoError(t, first.Close())
		t.Skipf("no NVRTC: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, first.Compile(mod), "loaded modules are reused")
	require.Equal(t, cuda.CacheStats{Dir: dir, Hits: 0, Compiles: 1}, first.KernelCache())
	require.NoError(t, first.Close())
	files, err := filepath.Glob(filepath.Join(dir, "*.cubin"))
	require.NoError(t, err)
	require.Len(t, files, 1)

	// A new device (as in the next process) finds the CUBIN on disk.
	second, err := cuda.Open(0, cuda.Options{KernelCacheDir: dir})
	require.NoError(t, err)
	require.NoError(t, second.Compile(mod))
	require.Equal(t, cuda.CacheStats{Dir: dir, Hits: 1, Compiles: 0}, second.KernelCache())
	require.NoError(t, second.Close())

	// A damaged entry is recompiled and rewritten.
	require.NoError(t, os.WriteFile(files[0], []byte("not a cubin"), 0o644))
	third, err := cuda.Open(0, cuda.Options{KernelCacheDir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, third.Close()) }()
	require.NoError(t, third.Compile(mod))
	require.Equal(t, cuda.CacheStats{Dir: dir, Hits: 0, Compiles: 1}, third.KernelCache())
	fixed, err := os.ReadFile(files[0])
	require.NoError(t, err)
	require.Greater(t, len(fixed), 100)
}

func TestCompileOnly(t *testing.T) {
	cubin, log, err := cuda.CompileOnly(testModule, "sm_90")
	skipWithoutNVRTC(t, err)
	require.NoError(t, err, "log: %s", log)
	require.True(t, bytes.HasPrefix(cubin, []byte("\x7fELF")), "a CUBIN is an ELF image")
	_, _, err = cuda.CompileOnly(testModule, "compute_90")
	require.ErrorIs(t, err, device.ErrInvalidArgument)
}

// TestExportAnotherLibrarysAllocation: the base of an allocation made in the
// same context by someone else (here a second Device on the same primary
// context, as PyTorch's allocator would) is exported; a pointer inside it
// is not, with an error naming the allocation's base.
func TestExportAnotherLibrarysAllocation(t *testing.T) {
	d, other := openDevice(t), openDevice(t)
	p := alloc(t, other, 1<<20)
	h, err := d.ExportMem(p)
	require.NoError(t, err)
	require.Len(t, h, 64)
	_, err = d.ExportMem(p.Add(512))
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorContains(t, err, "not the base of an allocation")
}

// TestIPCWithinOneProcess: CUDA refuses to open a handle in the process that
// exported it; the error must be clean and leave nothing behind.
func TestIPCWithinOneProcess(t *testing.T) {
	d := openDevice(t)
	p := alloc(t, d, 1<<20)
	h, err := d.ExportMem(p)
	require.NoError(t, err)
	require.Len(t, h, 64)
	_, err = d.ExportMem(p.Add(256))
	require.ErrorIs(t, err, device.ErrInvalidArgument, "only allocation bases are exported")

	v, err := d.OpenPeer(h)
	if err == nil {
		// Should a driver ever allow it, the view must still work and close.
		t.Logf("this driver opened its own IPC handle at %v", v)
		require.NoError(t, d.ClosePeer(v))
	} else {
		t.Logf("opening an own handle fails as expected: %v", err)
	}
	require.Zero(t, d.Live().Views)
	_, err = d.OpenPeer(h[:10])
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	require.ErrorIs(t, d.ClosePeer(p), device.ErrInvalidArgument)
}

func TestProbe(t *testing.T) {
	rep, err := cuda.Probe()
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA driver: %v", err)
	}
	require.NoError(t, err)
	t.Logf("\n%s", rep)
	require.Greater(t, rep.DriverVersion, 11000)
	n, err := cuda.Count()
	require.NoError(t, err)
	require.Len(t, rep.Devices, n)
	require.Len(t, rep.Peers, n*(n-1))
	for _, dr := range rep.Devices {
		require.NotEmpty(t, dr.Name)
		require.NotEmpty(t, dr.PCIBusID)
		require.Positive(t, dr.SMs)
		require.Positive(t, dr.L2Bytes)
		require.Positive(t, dr.TotalMemory)
		require.Regexp(t, `^[0-9]+\.[0-9]+$`, dr.ComputeCapability)
		uva, ok := dr.Attr("UNIFIED_ADDRESSING")
		require.True(t, ok)
		require.Equal(t, 1, uva)
		_, ok = dr.Attr("MULTICAST_SUPPORTED")
		require.True(t, ok)
	}
	for _, p := range rep.Peers {
		require.NotEqual(t, p.From, p.To)
		if p.CanAccessPeer {
			require.Equal(t, 1, p.AccessSupported)
		}
	}
}

func TestClosedDevice(t *testing.T) {
	d, err := cuda.Open(0, cuda.Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	s, err := d.NewStream(device.Normal)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, d.Close())
	_, err = d.Alloc(16)
	require.ErrorIs(t, err, device.ErrClosed)
	_, err = d.NewStream(device.Normal)
	require.ErrorIs(t, err, device.ErrClosed)
}

// TestTwoDevices drives two GPUs from many goroutines at once: every call
// must run in its own device's context whichever OS thread it lands on.
func TestTwoDevices(t *testing.T) {
	n, err := cuda.Count()
	if err != nil || n < 2 {
		t.Skipf("needs two GPUs (count %d, %v)", n, err)
	}
	d0 := openDevice(t)
	d1, err := cuda.Open(1, cuda.Options{KernelCacheDir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, d1.Close()) }()
	require.Equal(t, 1, d1.Info().Ordinal)

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := d0
			if g%2 == 1 {
				d = d1
			}
			errs <- exercise(d, uint32(g))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, cuda.LiveCounts{}, d1.Live())
}

// exercise allocates, fills on a stream, reads back and releases.
func exercise(d *cuda.Device, seed uint32) (err error) {
	s, err := d.NewStream(device.Normal)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	for i := range 50 {
		p, err := d.Alloc(4096)
		if err != nil {
			return err
		}
		v := seed<<16 | uint32(i)
		if err := d.Memset32(s, p, v, 1024); err != nil {
			return errors.Join(err, d.Free(p))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.Synchronize(ctx)
		cancel()
		b := make([]byte, 4096)
		if err == nil {
			err = d.CopyToHost(b, p)
		}
		if err := errors.Join(err, d.Free(p)); err != nil {
			return err
		}
		if got := binary.LittleEndian.Uint32(b[4092:]); got != v {
			return fmt.Errorf("%s: read %#x, want %#x", d.Name(), got, v)
		}
	}
	return nil
}
