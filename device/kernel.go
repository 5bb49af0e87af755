package device

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/dtype"
)

// Module is one unit of self-contained CUDA C source (no #include), compiled
// as one NVRTC program by the CUDA backend and cached on disk.
type Module struct {
	Name   string
	Source string
	// Arch, when set, is the one architecture the module is written for
	// ("sm_90a": Hopper's wgmma and setmaxnreg); the CUDA backend compiles
	// for it and refuses the module on other devices (ErrNotSupported).
	Arch string
}

// Kernel is a named entry point of a Module together with a Go function of
// the same effect, which the CPU backend runs instead.
//
// Arguments are passed to Launch in the order the CUDA signature declares
// them; each must be a Ptr, int32, uint32, int64, uint64, float32 or
// TensorMap.
type Kernel struct {
	Module *Module
	Name   string // extern "C" __global__ entry point in Module
	Block  int    // threads per block on the GPU
	Shared int    // bytes of dynamic shared memory per block
	Host   HostFunc
}

// HostFunc runs a kernel on the host. grid is the launch's block count, the
// bound on the workers the function may use; mem resolves device pointers.
type HostFunc func(mem HostMemory, grid int, args []any) error

// HostMemory gives a host kernel access to device memory, and the signal
// operations a kernel that synchronises with other ranks' kernels needs
// (what a GPU kernel does with release stores, release atomics and acquire
// loads in a spin loop).
type HostMemory interface {
	// Bytes returns the n bytes at p, or an error if [p, p+n) is not inside
	// one live allocation (an out-of-bounds access, which the GPU would not
	// report).
	Bytes(p Ptr, n int64) ([]byte, error)
	// Store32 atomically writes v to the word at p (a release store).
	Store32(p Ptr, v uint32) error
	// Add32 atomically adds v to the word at p (a release atomic).
	Add32(p Ptr, v uint32) error
	// Wait32 blocks until the word satisfies cmp v, bounded like a stream
	// wait-value: it fails with a *TimeoutError naming w.
	Wait32(w Word, cmp Cmp, v uint32) error
	// Wait32Or is Wait32 that also ends, without error, once the word at
	// abort is not 0 (a kernel's way out when the host gives up on a peer).
	Wait32Or(w Word, cmp Cmp, v uint32, abort Ptr) error
}

// CheckArgs verifies that args match the types a kernel accepts, so both
// backends reject the same mistakes.
func CheckArgs(k *Kernel, args []any) error {
	for i, a := range args {
		switch a.(type) {
		case Ptr, int32, uint32, int64, uint64, float32, TensorMap:
		default:
			return fmt.Errorf("device: kernel %s argument %d has unsupported type %T: %w", k.Name, i, a, ErrInvalidArgument)
		}
	}
	return nil
}

// TensorMap describes a row-major 2-D tensor a kernel loads tiles of with
// the GPU's tensor memory accelerator (TMA): Rows rows of Cols elements,
// RowBytes apart, loaded BoxCols × BoxRows at a time into shared memory
// with the 128-byte swizzle; what lies outside the tensor reads as zero.
// The CUDA backend encodes it (cuTensorMapEncodeTiled) into the 128-byte
// __grid_constant__ parameter such a kernel takes; the CPU backend hands it
// to the kernel's Go twin as it is.
type TensorMap struct {
	Base             Ptr
	DType            dtype.DType // BF16, F16 or E4M3
	Cols, Rows       int64
	RowBytes         int64
	BoxCols, BoxRows int
}

// Check reports whether TMA can describe m: 16-byte aligned base and row
// stride, positive sizes, a box of at most 256 in each dimension whose rows
// span the 128 bytes of the swizzle.
func (m TensorMap) Check() error {
	bad := func(why string) error {
		return fmt.Errorf("device: tensor map of [%d, %d] %v at %v (row stride %d bytes): %s: %w", m.Rows, m.Cols, m.DType, m.Base, m.RowBytes, why, ErrNotSupported)
	}
	switch {
	case m.DType != dtype.BF16 && m.DType != dtype.F16 && m.DType != dtype.E4M3:
		return bad("only bf16, fp16 and e4m3")
	case m.Rows <= 0 || m.Cols <= 0 || m.BoxRows <= 0 || m.BoxCols <= 0 || m.BoxRows > 256 || m.BoxCols > 256:
		return bad("sizes")
	case m.Base == 0 || uint64(m.Base)%16 != 0:
		return bad("the base is not 16-byte aligned")
	case m.RowBytes%16 != 0 || m.RowBytes < m.Cols*int64(m.DType.Size()):
		return bad("the row stride is not a multiple of 16 bytes covering a row")
	case m.BoxCols*m.DType.Size() != 128:
		return bad("box rows must be 128 bytes (the swizzle span)")
	}
	return nil
}
