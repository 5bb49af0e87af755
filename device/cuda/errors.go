package cuda

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

// Error is a CUDA driver call that failed: which call (with its main
// arguments), the CUresult, and the driver's own name and description of it.
//
//	cuda: cuMemAlloc_v2(1073741824): CUDA_ERROR_OUT_OF_MEMORY (out of memory)
//
// errors.Is maps a few codes onto the device sentinels: "no device", "stub
// library", "not supported" and driver-version mismatches are
// device.ErrNotSupported; invalid values and handles are
// device.ErrInvalidArgument; CUDA_ERROR_TIMEOUT is device.ErrTimeout.
type Error struct {
	Call string // "cuMemAlloc_v2(1073741824)"
	Code int    // the CUresult
	Name string // "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // "out of memory"
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return fmt.Sprintf("cuda: %s: %s", e.Call, e.Name)
	}
	return fmt.Sprintf("cuda: %s: %s (%s)", e.Call, e.Name, e.Msg)
}

// Is reports whether the error belongs to one of the device sentinels.
func (e *Error) Is(target error) bool {
	switch target {
	case device.ErrNotSupported:
		switch result(e.Code) {
		case cudaErrorStubLibrary, cudaErrorCallRequiresNewerDriver, cudaErrorNoDevice,
			cudaErrorNotSupported, cudaErrorSystemDriverMismatch, cudaErrorCompatNotSupported:
			return true
		}
	case device.ErrInvalidArgument:
		switch result(e.Code) {
		case cudaErrorInvalidValue, cudaErrorInvalidDevice, cudaErrorInvalidHandle:
			return true
		}
	case device.ErrTimeout:
		return result(e.Code) == cudaErrorTimeout
	}
	return false
}

// newError builds the Error for r, naming it through the driver.
func newError(drv api, r result, call string) *Error {
	e := &Error{Call: call, Code: int(r)}
	if drv != nil {
		e.Name = drv.errorName(r)
		e.Msg = drv.errorString(r)
	}
	if e.Name == "" {
		e.Name = fmt.Sprintf("CUresult(%d)", int(r))
	}
	return e
}

// check returns nil for CUDA_SUCCESS and the named *Error otherwise. The
// call description is formatted only on failure.
func check(drv api, r result, format string, args ...any) error {
	if r == cudaSuccess {
		return nil
	}
	return newError(drv, r, fmt.Sprintf(format, args...))
}

// unusable is a driver that is installed but cannot be used in this process
// (cuInit failed: no device, no /dev/nvidia* in a container, a driver/library
// mismatch). It reads as msg and is both its *Error and
// device.ErrNotSupported, so callers fall back as when there is no driver.
type unusable struct {
	msg string
	err error
}

func (e *unusable) Error() string   { return e.msg }
func (e *unusable) Unwrap() []error { return []error{e.err, device.ErrNotSupported} }
