package rs2d_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/check"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// lateDevice holds back one kind of work on its streams: before each copy
// (copies) or each NVLS reduce launch (reads), its stream sleeps for delay,
// as a slow GPU would be late. It forwards its device's multicast
// capability.
type lateDevice struct {
	multicastOf
	delay         time.Duration
	copies, reads bool
}

var sleepKernel = func(d time.Duration) *device.Kernel {
	return &device.Kernel{Name: "sleep", Host: func(device.HostMemory, int, []any) error { time.Sleep(d); return nil }}
}

func (l *lateDevice) Copy(s device.Stream, dst, src device.Ptr, n int64) error {
	if l.copies {
		if err := l.Device.Launch(s, sleepKernel(l.delay), 1); err != nil {
			return err
		}
	}
	return l.Device.Copy(s, dst, src, n)
}

func (l *lateDevice) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	if l.reads && strings.HasPrefix(k.Name, "hc_nvls_reduce_") {
		if err := l.Device.Launch(s, sleepKernel(l.delay), 1); err != nil {
			return err
		}
	}
	return l.Device.Launch(s, k, grid, args...)
}

// multicastOf is a test's wrapper of a device that forwards, besides the
// Device methods, the wrapped device's multicast capability (the NVLS
// engine's).
type multicastOf struct{ device.Device }

func (m multicastOf) MulticastGranularity(p device.Permit, devices int) (int64, error) {
	return m.Device.(device.Multicaster).MulticastGranularity(p, devices)
}

func (m multicastOf) CreateMulticast(p device.Permit, devices int, size int64) (device.Multicast, error) {
	return m.Device.(device.Multicaster).CreateMulticast(p, devices, size)
}

func (m multicastOf) ImportMulticast(p device.Permit, handle []byte) (device.Multicast, error) {
	return m.Device.(device.Multicaster).ImportMulticast(p, handle)
}

// The two node barriers of the NVLS engine hold: a rank whose input copy is
// late is waited for before anyone load-reduces (else its peers would sum
// its old rows), and a rank whose load-reduce is late is waited for before
// the next call overwrites the bound buffers (else it would sum the next
// call's rows). Several calls in a row on fresh data, int32 bit for bit.
func TestNVLSBarriers(t *testing.T) {
	for _, late := range []struct {
		name          string
		copies, reads bool
	}{{"copy late", true, false}, {"reads late", false, true}} {
		t.Run(late.name, func(t *testing.T) {
			t.Parallel()
			shape := bootstrap.Shape{Nodes: 1, LocalSize: 3}
			const rowsPer, n, calls, lateRank = 2, 24, 4, 1
			w := simWorld(t, shape)
			ws := shape.World()
			m := rowsPer * ws
			dt := dtype.I32
			inputs := callInputs(dt, calls, ws, m*n)
			ctx := testContext(t)
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				dev := r.Dev
				if r.Comm.Rank() == lateRank {
					dev = &lateDevice{multicastOf: multicastOf{r.Dev}, delay: 50 * time.Millisecond, copies: late.copies, reads: late.reads}
				}
				rs, err := rs2d.New(ctx, r.Comm, dev, rs2d.Config{MaxM: m, N: n, DType: dt, Engine: rs2d.EngineNVLS})
				if err != nil {
					return err
				}
				defer rs.Close()
				in, out, free := rankBuffers(t, dev, m, n, ws, dt)
				defer free()
				s, err := dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer s.Close()
				// Each rank waits for its own calls (so that it may write
				// the next input), never for its peers': only the barriers
				// keep the ranks in step.
				outs := make([]device.Ptr, calls)
				for c := range calls {
					if outs[c], err = dev.Alloc(int64(rowsPer * n * dt.Size())); err != nil {
						return err
					}
					defer dev.Free(outs[c])
				}
				for c := range calls {
					if err := dev.CopyToDevice(in.Ptr, inputs[c][r.Comm.Rank()]); err != nil {
						return err
					}
					o := out
					o.Ptr = outs[c]
					if err := rs.ReduceScatter(ctx, in, o, s); err != nil {
						return err
					}
					if err := s.Synchronize(ctx); err != nil {
						return err
					}
				}
				got := make([]byte, rowsPer*n*dt.Size())
				for c := range calls {
					if err := dev.CopyToHost(got, outs[c]); err != nil {
						return err
					}
					if rep := check.ReduceScatter(dt, inputs[c], r.Comm.Rank(), rowsPer, n).Compare(got, 1); !rep.OK() {
						return fmt.Errorf("call %d: %v", c, rep)
					}
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// The NVLS engine runs only when named and let through the gate: Auto never
// picks it (no multicast object exists while an Auto context lives), it
// refuses GEMM overlap, and a device without a multicast capability makes
// every rank fail with ErrNotSupported before any multicast call.
func TestNVLSOnlyWhenNamed(t *testing.T) {
	require.Equal(t, "nvls", rs2d.EngineNVLS.String())
	e, err := rs2d.ParseEngine("nvls")
	require.NoError(t, err)
	require.Equal(t, rs2d.EngineNVLS, e)

	shape := bootstrap.Shape{Nodes: 2, LocalSize: 2}
	w := simWorld(t, shape)
	ctx := testContext(t)
	before := sim.Live().Multicasts
	err = w.Run(ctx, func(ctx context.Context, r world.Rank) error {
		for _, overlap := range []bool{false, true} {
			rs, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, OverlapWithGEMM: overlap})
			if err != nil {
				return err
			}
			if e := rs.Config().Engine; e == rs2d.EngineNVLS {
				return errors.Join(fmt.Errorf("auto picked %v", e), rs.Close())
			}
			if n := sim.Live().Multicasts; n != before {
				return errors.Join(fmt.Errorf("an Auto context holds %d multicast objects", n-before), rs.Close())
			}
			if err := rs.Close(); err != nil {
				return err
			}
		}
		_, err := rs2d.New(ctx, r.Comm, r.Dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, Engine: rs2d.EngineNVLS, OverlapWithGEMM: true})
		if !errors.Is(err, device.ErrNotSupported) {
			return fmt.Errorf("NVLS with GEMM overlap: got %v, want not supported", err)
		}
		// One rank's device has no Multicaster: every rank is refused.
		dev := r.Dev
		if r.Comm.Rank() == 3 {
			dev = struct{ device.Device }{r.Dev}
		}
		_, err = rs2d.New(ctx, r.Comm, dev, rs2d.Config{MaxM: 8, N: 4, DType: dtype.F32, Engine: rs2d.EngineNVLS})
		if !errors.Is(err, device.ErrNotSupported) || !strings.Contains(err.Error(), "engine nvls") {
			return fmt.Errorf("NVLS without a Multicaster on rank 3: got %v, want not supported", err)
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, before, sim.Live().Multicasts)
}
