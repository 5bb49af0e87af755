package cuda

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
)

func TestPackArgs(t *testing.T) {
	k := &device.Kernel{Name: "k"}
	noMaps := func(device.TensorMap) ([tensorMapSize]byte, error) {
		return [tensorMapSize]byte{}, errors.New("no tensor map expected")
	}
	b, offsets, err := packArgs(k, []any{device.Ptr(0x1122334455667788), int32(-2), uint32(7), int64(-3), uint64(1 << 63), float32(2.5)}, noMaps)
	require.NoError(t, err)
	require.Len(t, b, 6*argSlot)
	require.Equal(t, []int64{0, 8, 16, 24, 32, 40}, offsets)
	ne := binary.NativeEndian
	require.Equal(t, uint64(0x1122334455667788), ne.Uint64(b[0:]))
	require.Equal(t, uint32(0xfffffffe), ne.Uint32(b[8:]))
	require.Equal(t, uint32(0), ne.Uint32(b[12:]), "the rest of a 4-byte slot is zero")
	require.Equal(t, uint32(7), ne.Uint32(b[16:]))
	require.Equal(t, uint64(math.MaxUint64-2), ne.Uint64(b[24:]))
	require.Equal(t, uint64(1<<63), ne.Uint64(b[32:]))
	require.Equal(t, math.Float32bits(2.5), ne.Uint32(b[40:]))

	b, offsets, err = packArgs(k, nil, noMaps)
	require.NoError(t, err)
	require.Nil(t, b)
	require.Empty(t, offsets)
	_, _, err = packArgs(k, []any{1}, noMaps)
	require.ErrorIs(t, err, device.ErrInvalidArgument)

	// A tensor map goes to the next 64-byte boundary, 128 bytes long.
	var enc [tensorMapSize]byte
	for i := range enc {
		enc[i] = byte(i + 1)
	}
	m := device.TensorMap{Base: 0x1000}
	b, offsets, err = packArgs(k, []any{int32(5), m, uint32(9)}, func(got device.TensorMap) ([tensorMapSize]byte, error) {
		require.Equal(t, m, got)
		return enc, nil
	})
	require.NoError(t, err)
	require.Equal(t, []int64{0, 64, 192}, offsets)
	require.Equal(t, enc[:], b[64:192])
	require.Equal(t, uint32(9), ne.Uint32(b[192:]))
	require.Len(t, b, 200)
}

func TestWaitDone(t *testing.T) {
	t.Run("done at once", func(t *testing.T) {
		require.NoError(t, waitDone(context.Background(), "s", "x", func() (bool, error) { return true, nil }))
	})
	t.Run("done after polls", func(t *testing.T) {
		n := 0
		require.NoError(t, waitDone(context.Background(), "s", "x", func() (bool, error) { n++; return n > 100, nil }))
	})
	t.Run("query error", func(t *testing.T) {
		boom := errors.New("boom")
		require.ErrorIs(t, waitDone(context.Background(), "s", "x", func() (bool, error) { return false, boom }), boom)
	})
	t.Run("deadline", func(t *testing.T) {
		start := time.Now() // before the deadline is set, so that it is at least 30 ms after start
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		polls := 0
		err := waitDone(ctx, "stream 1", "stream synchronize", func() (bool, error) { polls++; return false, nil })
		took := time.Since(start)
		var te *device.TimeoutError
		require.ErrorAs(t, err, &te)
		require.ErrorIs(t, err, device.ErrTimeout)
		require.Equal(t, "stream 1", te.Stream)
		require.Equal(t, "stream synchronize", te.What)
		require.GreaterOrEqual(t, took, 30*time.Millisecond)
		require.Less(t, took, 500*time.Millisecond)
		require.Less(t, polls, 5000, "backs off instead of spinning")
		t.Logf("%d polls in %v", polls, took)
	})
	t.Run("finished at the deadline is not a timeout", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, waitDone(ctx, "s", "x", func() (bool, error) { return true, nil }))
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := waitDone(ctx, "s", "x", func() (bool, error) { return false, nil })
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, device.ErrTimeout)
	})
}

func TestDiskCache(t *testing.T) {
	c := diskCache{dir: filepath.Join(t.TempDir(), "nested", "cache")}
	opts := compileOptions("sm_90")
	key := cacheKey("src", "sm_90", "13.0", opts)
	require.Len(t, key, 64)
	require.NotEqual(t, key, cacheKey("src", "sm_100", "13.0", compileOptions("sm_100")))
	require.NotEqual(t, key, cacheKey("src", "sm_90", "12.8", opts))
	require.NotEqual(t, key, cacheKey("src2", "sm_90", "13.0", opts))
	require.NotEqual(t, key, cacheKey("src", "sm_90", "13.0", append(opts, "-G")))

	_, ok := c.load("mod", key)
	require.False(t, ok)
	cubin := []byte("\x7fELF some cubin")
	require.NoError(t, c.store("mod/with:odd name", key, cubin))
	got, ok := c.load("mod/with:odd name", key)
	require.True(t, ok)
	require.Equal(t, cubin, got)
	entries, err := os.ReadDir(c.dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary files left behind")
	require.Regexp(t, `^mod_with_odd_name-[0-9a-f]{32}\.cubin$`, entries[0].Name())

	// Damage: truncated, flipped byte, foreign file.
	path := c.path("mod/with:odd name", key)
	whole, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, bad := range [][]byte{whole[:len(whole)-1], append(append([]byte{}, whole[:len(whole)-1]...), 'X'), []byte("garbage")} {
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, ok := c.load("mod/with:odd name", key)
		require.False(t, ok)
	}

	// Concurrent writers of the same entry: one complete file wins.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, c.store("mod/with:odd name", key, cubin))
		}()
	}
	wg.Wait()
	got, ok = c.load("mod/with:odd name", key)
	require.True(t, ok)
	require.Equal(t, cubin, got)

	var none diskCache
	require.NoError(t, none.store("m", key, cubin))
	_, ok = none.load("m", key)
	require.False(t, ok)
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("HIERCOLL_CACHE_DIR", "/explicit")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	require.Equal(t, "/explicit", defaultCacheDir())
	t.Setenv("HIERCOLL_CACHE_DIR", "")
	require.Equal(t, "/xdg/hiercoll", defaultCacheDir())
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/someone")
	require.Equal(t, "/home/someone/.cache/hiercoll", defaultCacheDir())
}

func TestErrorMessagesAndSentinels(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2(1073741824)", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	require.Equal(t, "cuda: cuMemAlloc_v2(1073741824): CUDA_ERROR_OUT_OF_MEMORY (out of memory)", e.Error())
	require.NotErrorIs(t, e, device.ErrInvalidArgument)

	unnamed := newError(nil, 12345, "cuFoo")
	require.Equal(t, "cuda: cuFoo: CUresult(12345)", unnamed.Error())

	for code, sentinel := range map[result]error{
		cudaErrorNoDevice:      device.ErrNotSupported,
		cudaErrorStubLibrary:   device.ErrNotSupported,
		cudaErrorNotSupported:  device.ErrNotSupported,
		cudaErrorInvalidValue:  device.ErrInvalidArgument,
		cudaErrorInvalidHandle: device.ErrInvalidArgument,
		cudaErrorTimeout:       device.ErrTimeout,
	} {
		err := error(newError(nil, code, "call"))
		require.ErrorIs(t, err, sentinel, "code %d", code)
	}
	require.NoError(t, check(nil, cudaSuccess, "never formatted %d", 1))

	init := newError(nil, 999, "cuInit(0)")
	var err error = &unusable{msg: "cuda: no usable CUDA driver: cuInit(0): CUresult(999)", err: init}
	require.ErrorIs(t, err, device.ErrNotSupported)
	var cerr *Error
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, 999, cerr.Code)
}

func TestCompileOnlyChecksArguments(t *testing.T) {
	_, _, err := CompileOnly(nil, "sm_90")
	require.ErrorIs(t, err, device.ErrInvalidArgument)
	for _, arch := range []string{"90", "compute_90", "sm_9", "sm90", ""} {
		_, _, err := CompileOnly(&device.Module{Name: "m"}, arch)
		require.ErrorIs(t, err, device.ErrInvalidArgument, arch)
	}
	for _, arch := range []string{"sm_90", "sm_90a", "sm_100", "sm_100f"} {
		require.True(t, archPattern.MatchString(arch), arch)
	}
}
