package cuda

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// TestTensorMapOnThreadsWithoutContext encodes tensor maps from many OS
// threads at once, most of them new and so without a current context: the
// driver looks the base up in the current context (CUDA_ERROR_INVALID_CONTEXT
// on a thread without one, seen on an H100 when a goroutine moved), so the
// call must make the device's context current as every other call does.
func TestTensorMapOnThreadsWithoutContext(t *testing.T) {
	d, err := Open(0, Options{KernelCacheDir: t.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		t.Skipf("no CUDA device: %v", err)
	}
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Close()) }()
	if !d.drv.(interface{ hasTensorMaps() bool }).hasTensorMaps() {
		t.Skip("the driver has no cuTensorMapEncodeTiled")
	}
	p, err := d.Alloc(64 * 128)
	require.NoError(t, err)
	defer func() { require.NoError(t, d.Free(p)) }()
	m := device.TensorMap{Base: p, DType: dtype.BF16, Cols: 64, Rows: 64, RowBytes: 128, BoxCols: 64, BoxRows: 64}

	// Every goroutine holds its own OS thread until all have started, so
	// they run on as many distinct threads, more than the process had.
	const threads = 64
	var started, wg sync.WaitGroup
	started.Add(threads)
	wg.Add(threads)
	errs := make([]error, threads)
	for i := range threads {
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
			started.Done()
			started.Wait()
			_, errs[i] = d.encodeTensorMap(m)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}
