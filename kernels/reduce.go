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
//	dst[i] = block_0[i] + block_1[i] + ... + block_{blocks-1}[i]
//
// summed in block order, where block_k is src[k*stride:], except that block
// number self (when 0 <= self < blocks) is selfSrc: a rank's own block is
// read from its input rather than copied. bf16 and fp16 are widened to fp32, accumulated in
// fp32 and rounded once (to nearest even); fp32 accumulates in fp32; int32
// wraps like two's-complement hardware. stride and count are in elements.
// The CUDA kernel does the same operations in the same order, so the two
// agree bit for bit.
func ReduceBlocks(dt dtype.DType, dst, src []byte, stride int64, blocks int, count int64, self int, selfSrc []byte) {
	ReduceRange(dt, dst, blockViews(dt, src, stride, blocks, count, self, selfSrc), 0, count)
}

// blockViews returns each block as a slice starting at its first element.
func blockViews(dt dtype.DType, src []byte, stride int64, blocks int, count int64, self int, selfSrc []byte) [][]byte {
	es := int64(dt.Size())
	views := make([][]byte, blocks)
	for k := range views {
		if k == self {
			views[k] = selfSrc
		} else {
			views[k] = src[int64(k)*stride*es : (int64(k)*stride+count)*es]
		}
	}
	return views
}

// ReduceRange sums elements [lo, hi) of the views src into dst in fp32
// (int32 exact), view order, one rounding: the Go twin of every reduce the
// kernels do, shared by the engines' twins.
func ReduceRange(dt dtype.DType, dst []byte, src [][]byte, lo, hi int64) {
	le := binary.LittleEndian
	switch dt {
	case dtype.BF16:
		for i := lo; i < hi; i++ {
			var acc float32
			for _, b := range src {
				acc += dtype.BF16ToF32(le.Uint16(b[2*i:]))
			}
			le.PutUint16(dst[2*i:], dtype.F32ToBF16(acc))
		}
	case dtype.F16:
		for i := lo; i < hi; i++ {
			var acc float32
			for _, b := range src {
				acc += dtype.F16ToF32(le.Uint16(b[2*i:]))
			}
			le.PutUint16(dst[2*i:], dtype.F32ToF16(acc))
		}
	case dtype.F32:
		for i := lo; i < hi; i++ {
			var acc float32
			for _, b := range src {
				acc += math.Float32frombits(le.Uint32(b[4*i:]))
			}
			le.PutUint32(dst[4*i:], math.Float32bits(acc))
		}
	case dtype.I32:
		for i := lo; i < hi; i++ {
			var acc uint32
			for _, b := range src {
				acc += le.Uint32(b[4*i:])
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
		if len(args) != 7 {
			return fmt.Errorf("reduce takes 7 arguments, got %d: %w", len(args), device.ErrInvalidArgument)
		}
		dstP, ok1 := args[0].(device.Ptr)
		srcP, ok2 := args[1].(device.Ptr)
		stride, ok3 := args[2].(int64)
		blocks, ok4 := args[3].(int32)
		count, ok5 := args[4].(int64)
		self, ok6 := args[5].(int32)
		selfP, ok7 := args[6].(device.Ptr)
		if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || blocks < 1 || count < 0 || (blocks > 1 && stride < count) {
			return fmt.Errorf("reduce(%T %T %T %T %T %T %T) with blocks %v count %v stride %v: %w",
				args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[3], args[4], args[2], device.ErrInvalidArgument)
		}
		if count == 0 {
			return nil
		}
		es := int64(dt.Size())
		dst, err := mem.Bytes(dstP, count*es)
		if err != nil {
			return fmt.Errorf("reduce output: %w", err)
		}
		// Each block the kernel reads, and only those: block self comes from
		// selfP, and src + self·stride need not be memory at all.
		views := make([][]byte, blocks)
		for k := range views {
			if int32(k) == self {
				if views[k], err = mem.Bytes(selfP, count*es); err != nil {
					return fmt.Errorf("reduce own block: %w", err)
				}
				continue
			}
			if views[k], err = mem.Bytes(srcP.Add(int64(k)*stride*es), count*es); err != nil {
				return fmt.Errorf("reduce input block %d: %w", k, err)
			}
		}
		ReduceParallel(dt, dst, views, count, grid)
		return nil
	}
}

// ReduceParallel sums views into dst's count elements (ReduceRange) on at
// most grid goroutines, each taking at least 16 Ki elements.
func ReduceParallel(dt dtype.DType, dst []byte, views [][]byte, count int64, grid int) {
	const minPerWorker = 1 << 14
	workers := max(1, min(int64(grid), (count+minPerWorker-1)/minPerWorker))
	per := (count + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := int64(0); lo < count; lo += per {
		hi := min(lo+per, count)
		wg.Go(func() { ReduceRange(dt, dst, views, lo, hi) })
	}
	wg.Wait()
}
