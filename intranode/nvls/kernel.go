package nvls

import (
	_ "embed"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

//go:embed nvls.cu
var nvlsSource string

// Module is the CUDA source of the NVLS reduce kernels (multimem
// load-reduce: sm_90 or newer).
var Module = &device.Module{Name: "hiercoll_nvls", Source: nvlsSource}

// Block is the CUDA block size of the NVLS reduce kernel.
const Block = 512

// Vector is the bytes one multimem.ld_reduce reads from every GPU: the
// alignment of a block's multicast address, and what a block's stride in
// the multicast object is rounded up to.
const Vector = 16

var nvlsKernels = map[dtype.DType]*device.Kernel{}

func init() {
	for _, dt := range dtype.All {
		nvlsKernels[dt] = &device.Kernel{
			Module: Module,
			Name:   "hc_nvls_reduce_" + dt.String(),
			Block:  Block,
			Host:   nvlsHost(dt),
		}
	}
}

// Kernels lists the NVLS reduce kernels, one per dtype.
func Kernels() []*device.Kernel {
	ks := make([]*device.Kernel, 0, len(dtype.All))
	for _, dt := range dtype.All {
		ks = append(ks, nvlsKernels[dt])
	}
	return ks
}

// Prepare loads on dev the NVLS reduce kernel for dt (see kernels.Prepare).
func Prepare(dev device.Device, dt dtype.DType) error {
	k, ok := nvlsKernels[dt]
	if !ok {
		return fmt.Errorf("nvls: no NVLS kernel for %v: %w", dt, device.ErrNotSupported)
	}
	if err := dev.Prepare(k); err != nil {
		return fmt.Errorf("nvls: preparing %s: %w", k.Name, err)
	}
	return nil
}

// Padded is count elements of dt in bytes, rounded up to whole
// load-reduce vectors: what the kernel reads at a block's multicast address.
func Padded(dt dtype.DType, count int64) int64 {
	return (count*int64(dt.Size()) + Vector - 1) / Vector * Vector
}

// LaunchReduce enqueues on s, with at most grid thread blocks,
//
//	out[i] = sum over the GPUs bound to the multicast object of their element i at mc
//
// for i < count: each 16 bytes with one multimem.ld_reduce (bf16 and fp16
// accumulated in fp32, int32 exact). mc must be 16-byte aligned and the
// object must hold Padded(dt, count) bytes from mc.
func LaunchReduce(dev device.Device, s device.Stream, dt dtype.DType, grid int, out, mc device.Ptr, count int64) error {
	k, ok := nvlsKernels[dt]
	if !ok {
		return fmt.Errorf("nvls: no NVLS kernel for %v: %w", dt, device.ErrNotSupported)
	}
	if uint64(mc)%Vector != 0 || count < 0 {
		return fmt.Errorf("nvls: NVLS reduce of %d elements at multicast address %v (must be %d-byte aligned): %w",
			count, mc, Vector, device.ErrInvalidArgument)
	}
	if count == 0 {
		return nil
	}
	need := int((Padded(dt, count)/Vector + Block - 1) / Block)
	return dev.Launch(s, k, max(1, min(grid, need)), out, mc, count)
}

// nvlsHost is the CPU backend's NVLS reduce: the multicast address read
// through the simulated object (device.MulticastMemory), whole vectors as
// the kernel reads them, summed in device order (local-rank order in a
// simulated world) with the reduce's arithmetic (fp32 accumulation, one
// rounding; int32 wraps).
func nvlsHost(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		if len(args) != 3 {
			return fmt.Errorf("NVLS reduce takes 3 arguments, got %d: %w", len(args), device.ErrInvalidArgument)
		}
		out, ok1 := args[0].(device.Ptr)
		mc, ok2 := args[1].(device.Ptr)
		count, ok3 := args[2].(int64)
		if !(ok1 && ok2 && ok3) || count < 0 {
			return fmt.Errorf("NVLS reduce(%T %T %T): %w", args[0], args[1], args[2], device.ErrInvalidArgument)
		}
		mm, ok := mem.(device.MulticastMemory)
		if !ok {
			return fmt.Errorf("NVLS reduce: this backend's kernels cannot read multicast addresses: %w", device.ErrNotSupported)
		}
		views, err := mm.Multimem(mc, Padded(dt, count), Vector)
		if err != nil {
			return fmt.Errorf("NVLS reduce: %w", err)
		}
		dst, err := mem.Bytes(out, count*int64(dt.Size()))
		if err != nil {
			return fmt.Errorf("NVLS reduce output: %w", err)
		}
		kernels.ReduceParallel(dt, dst, views, count, grid)
		return nil
	}
}
