// Package kernels holds the GPU kernels the collectives share, twice: as
// CUDA C sources (embedded, compiled at run time by NVRTC in the CUDA
// backend and cached on disk) and as Go functions of the same effect, which
// the CPU backend runs and the tests use as the reference.
//
// The reduce kernel sums k row blocks lying at a fixed stride (the blocks
// the peers copied into this rank's buffer, or the blocks the other nodes
// sent) into one, the own block read from its own address: LaunchReduce. It
// accumulates in fp32 (exact for int32) in block order, so every backend
// gives the same bits; ReduceRange is that arithmetic for the engines' Go
// twins. PeerSource is the CUDA prelude (element types, system-scope loads,
// stores and atomics) every module that moves rows between GPUs starts
// with. An engine's own kernel lives in its folder under intranode.
package kernels

import (
	_ "embed"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

//go:embed cuda/reduce.cu
var reduceSource string

// ReduceModule is the CUDA source of the reduce kernels.
var ReduceModule = &device.Module{Name: "hiercoll_reduce", Source: PeerSource + reduceSource}

// ReduceBlock is the CUDA block size of the reduce kernel.
const ReduceBlock = 512

var reduceKernels = map[dtype.DType]*device.Kernel{}

func init() {
	for _, dt := range dtype.All {
		reduceKernels[dt] = &device.Kernel{
			Module: ReduceModule,
			Name:   "hc_reduce_" + dt.String(),
			Block:  ReduceBlock,
			Host:   reduceHost(dt),
		}
	}
}

// Reduce returns the reduce kernel for dt.
func Reduce(dt dtype.DType) (*device.Kernel, error) {
	k, ok := reduceKernels[dt]
	if !ok {
		return nil, fmt.Errorf("kernels: no reduce kernel for %v: %w", dt, device.ErrNotSupported)
	}
	return k, nil
}

// Prepare loads on dev the reduce kernel for dt. A collective calls it
// before it enqueues anything, since loading a module can wait for queued
// work (see device.Device.Prepare).
func Prepare(dev device.Device, dt dtype.DType) error {
	return PrepareKernel(dev, reduceKernels[dt], dt)
}

// PrepareKernel loads k, the kernel of dt (nil: none for dt), on dev.
func PrepareKernel(dev device.Device, k *device.Kernel, dt dtype.DType) error {
	if k == nil {
		return fmt.Errorf("kernels: no kernels for %v: %w", dt, device.ErrNotSupported)
	}
	if err := dev.Prepare(k); err != nil {
		return fmt.Errorf("kernels: preparing %s: %w", k.Name, err)
	}
	return nil
}

// Blocks says where the blocks a reduce sums lie: Count elements each, block
// k at Src + k*Stride elements, except block Self (-1: none), read from
// SelfSrc.
type Blocks struct {
	Src     device.Ptr
	Stride  int64
	N       int
	Count   int64
	Self    int
	SelfSrc device.Ptr
}

// LaunchCopy enqueues on s a copy of n bytes from src to dst by an SM
// kernel of at most grid thread blocks (the int32 reduce over one block: a
// bit-exact copy), or by the device's copy where n or an address is not a
// multiple of 4. On a few SMs it moves fewer bytes per second than the
// copy engine, whose copies back to back measured slowing an engine's
// pulls beside them more (benchmarks/RESULTS.md).
func LaunchCopy(dev device.Device, s device.Stream, grid int, dst, src device.Ptr, n int64) error {
	if (n|int64(dst)|int64(src))%4 != 0 {
		return dev.Copy(s, dst, src, n)
	}
	return LaunchReduce(dev, s, dtype.I32, grid, dst, Blocks{Src: src, Stride: n / 4, N: 1, Count: n / 4, Self: -1})
}

// LaunchReduce enqueues dst[i] = sum over the blocks of block[i] for i <
// b.Count on s, with at most grid thread blocks.
func LaunchReduce(dev device.Device, s device.Stream, dt dtype.DType, grid int, dst device.Ptr, b Blocks) error {
	k, err := Reduce(dt)
	if err != nil {
		return err
	}
	if b.Count == 0 {
		return nil
	}
	self := int32(-1)
	if b.Self >= 0 && b.Self < b.N {
		self = int32(b.Self)
	}
	// No more blocks than there is work for (one vector per thread minimum).
	need := int((b.Count*int64(dt.Size())/16 + ReduceBlock - 1) / ReduceBlock)
	grid = max(1, min(grid, need))
	return dev.Launch(s, k, grid, dst, b.Src, b.Stride, int32(b.N), b.Count, self, b.SelfSrc)
}
