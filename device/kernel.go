package device

import "fmt"

// Module is one unit of self-contained CUDA C source (no #include), compiled
// as one NVRTC program by the CUDA backend and cached on disk.
type Module struct {
	Name   string
	Source string
}

// Kernel is a named entry point of a Module together with a Go function of
// the same effect, which the CPU backend runs instead.
//
// Arguments are passed to Launch in the order the CUDA signature declares
// them; each must be a Ptr, int32, uint32, int64, uint64 or float32.
type Kernel struct {
	Module *Module
	Name   string // extern "C" __global__ entry point in Module
	Block  int    // threads per block on the GPU
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
}

// CheckArgs verifies that args match the types a kernel accepts, so both
// backends reject the same mistakes.
func CheckArgs(k *Kernel, args []any) error {
	for i, a := range args {
		switch a.(type) {
		case Ptr, int32, uint32, int64, uint64, float32:
		default:
			return fmt.Errorf("device: kernel %s argument %d has unsupported type %T: %w", k.Name, i, a, ErrInvalidArgument)
		}
	}
	return nil
}
