package nccl

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// Ptr is a device address (a device.Ptr, which this package does not
// import: native code sits below the backend seam).
type Ptr uint64

// UniqueIDSize is the size of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES).
const UniqueIDSize = 128

// DataType is an ncclDataType_t.
type DataType int32

// The NCCL element types hiercoll uses (nccl.h: ncclDataType_t).
const (
	Int32    DataType = 2 // ncclInt32
	Float16  DataType = 6 // ncclFloat16
	Float32  DataType = 7 // ncclFloat32
	Bfloat16 DataType = 9 // ncclBfloat16
)

// String names the type as nccl.h does.
func (t DataType) String() string {
	switch t {
	case Int32:
		return "ncclInt32"
	case Float16:
		return "ncclFloat16"
	case Float32:
		return "ncclFloat32"
	case Bfloat16:
		return "ncclBfloat16"
	}
	return fmt.Sprintf("ncclDataType(%d)", int32(t))
}

// TypeOf maps a hiercoll element type to NCCL's.
func TypeOf(d dtype.DType) (DataType, error) {
	switch d {
	case dtype.BF16:
		return Bfloat16, nil
	case dtype.F16:
		return Float16, nil
	case dtype.F32:
		return Float32, nil
	case dtype.I32:
		return Int32, nil
	}
	return 0, fmt.Errorf("nccl: element type %v has no NCCL equivalent here: %w", d, hcerr.ErrInvalidArgument)
}

// RedOp is an ncclRedOp_t.
type RedOp int32

// Sum is ncclSum, the only reduction hiercoll uses.
const Sum RedOp = 0

// Result is an ncclResult_t.
type Result int32

// NCCL's result codes (nccl.h: ncclResult_t).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8 // newer NCCL releases only
)

// String names the code as nccl.h does.
func (r Result) String() string {
	switch r {
	case Success:
		return "ncclSuccess"
	case UnhandledCudaError:
		return "ncclUnhandledCudaError"
	case SystemError:
		return "ncclSystemError"
	case InternalError:
		return "ncclInternalError"
	case InvalidArgument:
		return "ncclInvalidArgument"
	case InvalidUsage:
		return "ncclInvalidUsage"
	case RemoteError:
		return "ncclRemoteError"
	case InProgress:
		return "ncclInProgress"
	case Timeout:
		return "ncclTimeout"
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// Error is an NCCL call that did not return ncclSuccess.
type Error struct {
	Call   string // the NCCL function, e.g. "ncclReduceScatter"
	Code   Result
	Text   string // ncclGetErrorString(Code)
	Detail string // ncclGetLastError, where the library has it and said something
}

func (e *Error) Error() string {
	s := fmt.Sprintf("nccl: %s: %v (%d)", e.Call, e.Code, int32(e.Code))
	if e.Text != "" {
		s += ": " + e.Text
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is lets errors.Is match the hiercoll sentinel a code corresponds to.
func (e *Error) Is(target error) bool {
	switch target {
	case hcerr.ErrInvalidArgument:
		return e.Code == InvalidArgument || e.Code == InvalidUsage
	case hcerr.ErrPeer:
		return e.Code == RemoteError
	case hcerr.ErrTimeout:
		return e.Code == Timeout
	}
	return false
}

// CUDAError is a CUDA driver call this package made around NCCL
// (retaining the device's primary context, making it current) that failed.
type CUDAError = dl.CUDAError

// DecodeVersion splits an NCCL version code (ncclGetVersion) into its parts:
// 22803 is 2.28.3; codes before 2.9 were X*1000+Y*100+Z.
func DecodeVersion(code int) (major, minor, patch int) {
	if code < 10000 {
		return code / 1000, code % 1000 / 100, code % 100
	}
	return code / 10000, code / 100 % 100, code % 100
}

// The environment variables this package reads.
const (
	// EnvLib names a libnccl.so.2 to try before any other.
	EnvLib = "HIERCOLL_NCCL_LIB"
	// envNVLS is NCCL's switch for its NVLink SHARP (multicast) path.
	envNVLS = "NCCL_NVLS_ENABLE"
)

// soname is the name NCCL 2.x installs itself under.
const soname = "libnccl.so.2"

// wheelPath is where the PyTorch wheel puts NCCL, under site-packages.
var wheelPath = filepath.Join("nvidia", "nccl", "lib", soname)

// candidates lists the libraries Load tries, in order, and the site-packages
// directories searched for the wheel's copy.
func candidates() (libs, searched []string) { return dl.Candidates(EnvLib, soname, wheelPath) }

// SitePackages returns the Python package directories searched for the
// wheel's copy of the library (see dl.SitePackages).
func SitePackages() []string { return dl.SitePackages() }

// nvlsOff makes sure NCCL will not take its NVLink SHARP path, which creates
// multicast objects: NCCL_NVLS_ENABLE is set to 0 when unset, and a value
// NCCL would read as anything but 0 is refused. NCCL parses the value with
// strtoll(s, NULL, 0); an unparsable value leaves NCCL's default (on).
var nvlsOff = dl.SafeEnv{Pkg: "nccl", Lib: "NCCL", Name: envNVLS, Off: "0", Safe: func(v string) bool {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
	return err == nil && n == 0
}}

// errNotLoaded reports a library that could not be loaded, naming what was tried.
func errNotLoaded(libs, searched []string, cause error) error {
	where := "no site-packages directory found"
	if len(searched) > 0 {
		where = "site-packages searched: " + strings.Join(searched, ", ")
	}
	return fmt.Errorf("nccl: cannot load NCCL (tried %s; %s for %s; set %s to its path): %w: %w",
		strings.Join(libs, ", "), where, wheelPath, EnvLib, hcerr.ErrNotSupported, cause)
}

// errNoCgo is what every call returns in a binary built without cgo.
var errNoCgo = errors.New("nccl: this binary was built without cgo (CGO_ENABLED=0), so it cannot load NCCL")
