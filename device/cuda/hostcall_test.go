package cuda

import (
	"context"
	"errors"
	"testing"

	"github.com/seed12530e24/hiercoll/device"
)

// hostCallModule is the smallest copy kernel, for the launch's host cost.
var hostCallModule = &device.Module{
	Name: "hostcall",
	Source: `extern "C" __global__ void hc_hostcall_copy(unsigned int *dst, const unsigned int *src, unsigned int n) {
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) dst[i] = src[i];
}
`,
}

// BenchmarkHostCall times the host side of each driver call a
// reduce-scatter call makes, one call at a time on a tiny buffer: the floor
// under the library's host cost per call (hiercoll bench --host-cost), and
// the candidates for a step (a copy against a kernel launch; a timed event
// against an untimed one). The stream is
// drained outside the timed part every 256 calls, so no queue fills.
//
//	build/device_cuda.test -test.run '^$' -test.bench HostCall -test.count 5
func BenchmarkHostCall(b *testing.B) {
	d, err := Open(0, Options{KernelCacheDir: b.TempDir()})
	if errors.Is(err, device.ErrNotSupported) {
		b.Skipf("no CUDA device: %v", err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	s, err := d.NewStream(device.Normal)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st := s.(*stream)
	buf, err := d.Alloc(1 << 16)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Free(buf)
	src, dst := buf, buf+4096
	timed, err := d.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer timed.Close()
	untimed, r := d.drv.eventCreate(d.ctx, eventDisableTiming)
	if err := d.check(r, "cuEventCreate(DISABLE_TIMING)"); err != nil {
		b.Fatal(err)
	}
	defer d.drv.eventDestroy(d.ctx, untimed)
	kernel := &device.Kernel{Module: hostCallModule, Name: "hc_hostcall_copy", Block: 32}
	if err := d.Prepare(kernel); err != nil {
		b.Skipf("no NVRTC: %v", err)
	}
	const words = 16
	calls := []struct {
		name string
		call func() error
	}{
		{"Copy_cuMemcpyAsync", func() error { return d.Copy(s, dst, src, 4*words) }},
		{"Launch_copy_kernel", func() error { return d.Launch(s, kernel, 1, dst, src, uint32(words)) }},
		{"Event.Record_timed", func() error { return timed.Record(s) }},
		{"cuEventRecord_timed", func() error {
			return d.check(d.drv.eventRecord(d.ctx, timed.(*event).h, st.h), "cuEventRecord")
		}},
		{"cuEventRecord_untimed", func() error {
			return d.check(d.drv.eventRecord(d.ctx, untimed, st.h), "cuEventRecord")
		}},
		{"WriteValue32", func() error { return d.WriteValue32(s, dst, 1) }},
		{"AddressRange", func() error { _, _, err := d.AddressRange(src); return err }},
		{"Capturing", func() error { _, err := device.Capturing(s); return err }},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if i%256 == 0 {
					b.StopTimer()
					if err := s.Synchronize(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := s.Synchronize(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}
