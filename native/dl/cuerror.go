package dl

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// CUDAError is a CUDA driver call of the cuctx.h helpers (retaining a
// device's primary context, making it current) that failed around a
// library's call.
type CUDAError struct {
	Lib  string // the loader it happened in: "nccl", "nvshmem"
	Call string // e.g. "cuDevicePrimaryCtxRetain"
	Code int    // CUresult
	Name string // cuGetErrorName, e.g. "CUDA_ERROR_INVALID_DEVICE"
}

func (e *CUDAError) Error() string {
	return fmt.Sprintf("%s: %s: CUDA error %d (%s)", e.Lib, e.Call, e.Code, e.Name)
}

// Is matches CUDA_ERROR_NO_DEVICE and CUDA_ERROR_STUB_LIBRARY to
// hcerr.ErrNotSupported and CUDA_ERROR_INVALID_DEVICE to
// hcerr.ErrInvalidArgument.
func (e *CUDAError) Is(target error) bool {
	switch target {
	case hcerr.ErrNotSupported:
		return e.Code == 100 || e.Code == 34 // CUDA_ERROR_NO_DEVICE, CUDA_ERROR_STUB_LIBRARY
	case hcerr.ErrInvalidArgument:
		return e.Code == 101 // CUDA_ERROR_INVALID_DEVICE
	}
	return false
}
