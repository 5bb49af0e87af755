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

// HostMemory gives a host kernel access to device memory.
type HostMemory interface {
	// Bytes returns the n bytes at p, or an error if [p, p+n) is not inside
	// one live allocation (an out-of-bounds access, which the GPU would not
	// report).
	Bytes(p Ptr, n int64) ([]byte, error)
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
