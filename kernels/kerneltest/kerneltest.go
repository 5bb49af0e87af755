// Package kerneltest holds what the kernels' tests share: random elements,
// the reduce's independent reference, a bit-exact comparison and a
// simulated GPU to launch on.
package kerneltest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
	"github.com/seed12530e24/hiercoll/dtype"
)

func NewRNG(t *testing.T) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// RandomElems returns n elements of dt: floats of mixed sign with
// magnitudes spread over [2^-7, 2^6), so that the order of the additions
// shows in the rounded sums (and never zero, whose sign a sum from +0 would
// not keep); int32 over its whole range, so that sums wrap.
func RandomElems(rng *rand.Rand, dt dtype.DType, n int64) []byte {
	b := make([]byte, n*int64(dt.Size()))
	for i := range int(n) {
		if dt == dtype.I32 {
			binary.LittleEndian.PutUint32(b[4*i:], rng.Uint32())
			continue
		}
		sign := float64(1 - 2*rng.IntN(2))
		dt.Put(b, i, sign*(0.5+rng.Float64()/2)*math.Ldexp(1, rng.IntN(13)-6))
	}
	return b
}

// Widen reads element i of a dt buffer as the fp32 the kernel adds.
func Widen(dt dtype.DType, b []byte, i int64) float32 {
	switch dt {
	case dtype.BF16:
		return dtype.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
	case dtype.F16:
		return dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

// ReferenceReduce is the kernel's contract, computed independently: each
// element summed from 0 in block order, every partial sum rounded to fp32
// (an fp32 addition done in fp64 and rounded once is exactly the fp32
// addition: 53 >= 2*24+2), the total rounded once to dt. int32 wraps. Block
// number self, when 0 <= self < blocks, is read from selfSrc.
func ReferenceReduce(dt dtype.DType, src []byte, stride int64, blocks int, count int64, self int, selfSrc []byte) []byte {
	block := func(k, i int64) (b []byte, j int64) {
		if k == int64(self) {
			return selfSrc, i
		}
		return src, k*stride + i
	}
	out := make([]byte, count*int64(dt.Size()))
	for i := int64(0); i < count; i++ {
		if dt == dtype.I32 {
			var acc uint32
			for k := int64(0); k < int64(blocks); k++ {
				b, j := block(k, i)
				acc += binary.LittleEndian.Uint32(b[4*j:])
			}
			binary.LittleEndian.PutUint32(out[4*i:], acc)
			continue
		}
		var acc float32
		for k := int64(0); k < int64(blocks); k++ {
			b, j := block(k, i)
			acc = float32(float64(acc) + float64(Widen(dt, b, j)))
		}
		switch dt {
		case dtype.BF16:
			binary.LittleEndian.PutUint16(out[2*i:], dtype.F32ToBF16(acc))
		case dtype.F16:
			binary.LittleEndian.PutUint16(out[2*i:], dtype.F32ToF16(acc))
		case dtype.F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(acc))
		}
	}
	return out
}

// RequireSameBits compares two dt buffers element by element, naming the
// first element that differs.
func RequireSameBits(t *testing.T, dt dtype.DType, want, got []byte, msgAndArgs ...any) {
	t.Helper()
	require.Len(t, got, len(want))
	if bytes.Equal(want, got) {
		return
	}
	es := dt.Size()
	for i := 0; i < len(want); i += es {
		if !bytes.Equal(want[i:i+es], got[i:i+es]) {
			require.Failf(t, "bits differ", "%v element %d: got %x (%g), want %x (%g). %s", dt, i/es,
				got[i:i+es], dt.Get(got, i/es), want[i:i+es], dt.Get(want, i/es), fmt.Sprint(msgAndArgs...))
		}
	}
}

// PoisonElems returns n elements that change any sum they enter: NaN for
// floats, random for int32.
func PoisonElems(rng *rand.Rand, dt dtype.DType, n int64) []byte {
	if dt == dtype.I32 {
		return RandomElems(rng, dt, n)
	}
	b := make([]byte, n*int64(dt.Size()))
	for i := range int(n) {
		dt.Put(b, i, math.NaN())
	}
	return b
}

// SimDevice returns a simulated GPU, a stream on it and a context.
func SimDevice(t *testing.T) (*sim.Device, device.Stream, context.Context) {
	t.Helper()
	d := sim.New(sim.NewHost("kerneltest"), 0, sim.Options{WaitTimeout: time.Minute})
	s, err := d.NewStream(device.High)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(func() {
		cancel()
		require.NoError(t, s.Close())
		require.NoError(t, d.Close())
	})
	return d, s, ctx
}

func Upload(t *testing.T, d *sim.Device, data []byte) device.Ptr {
	t.Helper()
	p, err := d.Alloc(int64(len(data)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Free(p)) })
	require.NoError(t, d.CopyToDevice(p, data))
	return p
}

func Download(t *testing.T, d *sim.Device, p device.Ptr, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	require.NoError(t, d.CopyToHost(b, p))
	return b
}

// LaunchRecorder records the launches it passes on.
type LaunchRecorder struct {
	device.Device
	Grids []int
	Args  [][]any
}

// Launch records the launch and passes it on.
func (r *LaunchRecorder) Launch(s device.Stream, k *device.Kernel, grid int, args ...any) error {
	r.Grids = append(r.Grids, grid)
	r.Args = append(r.Args, args)
	return r.Device.Launch(s, k, grid, args...)
}
