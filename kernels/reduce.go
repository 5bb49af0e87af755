package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
)

// ReduceBlocks is the reference of the reduce kernel: for i < count,
//
//	dst[i] = src[i] + src[stride+i] + ... + src[(blocks-1)*stride+i]
//
// summed in block order. bf16 and fp16 are widened to fp32, accumulated in
// fp32 and rounded once (to nearest even); fp32 accumulates in fp32; int32
// wraps like two's-complement hardware. stride and count are in elements.
// The CUDA kernel does the same operations in the same order, so the two
// agree bit for bit.
func ReduceBlocks(dt dtype.DType, dst, src []byte, stride int64, blocks int, count int64) {
	reduceRange(dt, dst, src, stride, blocks, 0, count)
}

func reduceRange(dt dtype.DType, dst, src []byte, stride int64, blocks int, lo, hi int64) {
	le := binary.LittleEndian
	switch dt {
	case dtype.BF16:
		for i := lo; i < hi; i++ {
			var acc float32
			for k := int64(0); k < int64(blocks); k++ {
				acc += dtype.BF16ToF32(le.Uint16(src[2*(k*stride+i):]))
			}
			le.PutUint16(dst[2*i:], dtype.F32ToBF16(acc))
		}
	case dtype.F16:
		for i := lo; i < hi; i++ {
			var acc float32
			for k := int64(0); k < int64(blocks); k++ {
				acc += dtype.F16ToF32(le.Uint16(src[2*(k*stride+i):]))
			}
			le.PutUint16(dst[2*i:], dtype.F32ToF16(acc))
		}
	case dtype.F32:
		for i := lo; i < hi; i++ {
			var acc float32
			for k := int64(0); k < int64(blocks); k++ {
				acc += math.Float32frombits(le.Uint32(src[4*(k*stride+i):]))
			}
			le.PutUint32(dst[4*i:], math.Float32bits(acc))
		}
	case dtype.I32:
		for i := lo; i < hi; i++ {
			var acc uint32
			for k := int64(0); k < int64(blocks); k++ {
				acc += le.Uint32(src[4*(k*stride+i):])
			}
			le.PutUint32(dst[4*i:], acc)
		}
	default:
		panic("kernels: reduce of " + dt.String())
	}
}

// reduceHost is the CPU backend's version of the reduce kernel: the reference,
// spread over at most grid goroutines.
func reduceHost(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		if len(args) != 5 {
			return fmt.Errorf("reduce takes 5 arguments, got %d: %w", len(args), device.ErrInvalidArgument)
		}
		dstP, ok1 := args[0].(device.Ptr)
		srcP, ok2 := args[1].(device.Ptr)
		stride, ok3 := args[2].(int64)
		blocks, ok4 := args[3].(int32)
		count, ok5 := args[4].(int64)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) || blocks < 1 || count < 0 || (blocks > 1 && stride < count) {
			return fmt.Errorf("reduce(%T %T %T %T %T) with blocks %v count %v stride %v: %w",
				args[0], args[1], args[2], args[3], args[4], args[3], args[4], args[2], device.ErrInvalidArgument)
		}
		if count == 0 {
			return nil
		}
		es := int64(dt.Size())
		dst, err := mem.Bytes(dstP, count*es)
		if err != nil {
			return fmt.Errorf("reduce output: %w", err)
		}
		src, err := mem.Bytes(srcP, (int64(blocks-1)*stride+count)*es)
		if err != nil {
			return fmt.Errorf("reduce input: %w", err)
		}
		workers := int64(grid)
		const minPerWorker = 1 << 14
		if w := (count + minPerWorker - 1) / minPerWorker; w < workers {
			workers = w
		}
		var wg sync.WaitGroup
		per := (count + workers - 1) / workers
		for lo := int64(0); lo < count; lo += per {
			hi := min(lo+per, count)
			wg.Add(1)
			go func() {
				defer wg.Done()
				reduceRange(dt, dst, src, stride, int(blocks), lo, hi)
			}()
		}
		wg.Wait()
		return nil
	}
}
