package nvshmem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/native/dl"
)

// Ptr is a device address (a device.Ptr, which this package does not
// import: native code sits below the backend seam).
type Ptr uint64

// SignalOp is how a put-with-signal updates the signal word
// (nvshmemx_signal_op_t).
type SignalOp int32

// The signal operations.
const (
	SignalSet SignalOp = 9  // NVSHMEM_SIGNAL_SET: the word becomes the value
	SignalAdd SignalOp = 10 // NVSHMEM_SIGNAL_ADD: the value is added to the word
)

func (o SignalOp) String() string {
	switch o {
	case SignalSet:
		return "NVSHMEM_SIGNAL_SET"
	case SignalAdd:
		return "NVSHMEM_SIGNAL_ADD"
	}
	return fmt.Sprintf("SignalOp(%d)", int32(o))
}

// Cmp is the comparison of a signal wait (nvshmemx_cmp_type_t): the wait ends
// when "word cmp value" holds.
type Cmp int32

// The comparisons.
const (
	CmpEQ Cmp = 0 // NVSHMEM_CMP_EQ
	CmpNE Cmp = 1 // NVSHMEM_CMP_NE
	CmpGT Cmp = 2 // NVSHMEM_CMP_GT
	CmpLE Cmp = 3 // NVSHMEM_CMP_LE
	CmpLT Cmp = 4 // NVSHMEM_CMP_LT
	CmpGE Cmp = 5 // NVSHMEM_CMP_GE
)

func (c Cmp) String() string {
	switch c {
	case CmpEQ:
		return "=="
	case CmpNE:
		return "!="
	case CmpGT:
		return ">"
	case CmpLE:
		return "<="
	case CmpLT:
		return "<"
	case CmpGE:
		return ">="
	}
	return fmt.Sprintf("Cmp(%d)", int32(c))
}

// Team names one of NVSHMEM's predefined teams (nvshmem_team_t).
type Team int32

// The predefined teams.
const (
	TeamWorld        Team = 0 // NVSHMEM_TEAM_WORLD: every PE
	TeamShared       Team = 1 // NVSHMEM_TEAM_SHARED: PEs that share memory with this one
	TeamNode         Team = 2 // NVSHMEMX_TEAM_NODE: PEs on this host
	TeamSameMyPENode Team = 3 // NVSHMEMX_TEAM_SAME_MYPE_NODE: the same local index on every host (the rail)
)

// statusInitialized is NVSHMEM_STATUS_IS_INITIALIZED, what
// nvshmemx_init_status reports once NVSHMEM is fully up (higher values are
// multi-PE-per-GPU variants of it).
const statusInitialized = 2

// UniqueIDSize is the size of an nvshmemx_uniqueid_t.
const UniqueIDSize = 128

// initWithUniqueID is NVSHMEMX_INIT_WITH_UNIQUEID, the flag of
// nvshmemx_hostlib_init_attr.
const initWithUniqueID = 1 << 3

// The layout of nvshmemx_init_attr_t (v2, NVSHMEM 3.x, LP64), as the C side
// of this package asserts it:
//
//	offset size
//	     0    4 version             (2<<16) + 144
//	     8    8 mpi_comm            NULL
//	    16  128 args (nvshmemx_init_args_t)
//	    16    4   version           (2<<16) + 128
//	    24   24   uid_args (nvshmemx_uniqueid_args_t)
//	    24    4     version         (1<<16) + 24
//	    32    8     id              pointer to the 128-byte unique id
//	    40    4     myrank
//	    44    4     nranks
//	    48    4   cuda_device_id    the device ordinal (-1: the current device)
//	    52   92   reserved          zero
const (
	initAttrSize    = 144
	initArgsSize    = 128
	uidArgsSize     = 24
	initAttrVersion = 2<<16 + initAttrSize // NVSHMEM_INIT_ATTR_V2_IDENTIFIER
	initArgsVersion = 2<<16 + initArgsSize // NVSHMEM_INIT_ARGS_V2_IDENTIFIER
	uidArgsVersion  = 1<<16 + uidArgsSize  // NVSHMEMX_UNIQUEID_ARGS_INITIALIZER's version
	uniqueIDVersion = 1<<16 + UniqueIDSize // NVSHMEMX_UNIQUEID_INITIALIZER's version

	offAttrVersion    = 0
	offAttrMPIComm    = 8
	offArgs           = 16
	offArgsVersion    = offArgs
	offUIDArgs        = offArgs + 8
	offUIDArgsVersion = offUIDArgs
	offUIDArgsID      = offUIDArgs + 8
	offUIDArgsMyRank  = offUIDArgs + 16
	offUIDArgsNRanks  = offUIDArgs + 20
	offCUDADeviceID   = offArgs + 32
	offArgsReserved   = offArgs + 36
)

// packInitAttr lays out an nvshmemx_init_attr_t for the unique-id bootstrap
// in host byte order: uid is the address of the 128-byte unique id in C
// memory.
func packInitAttr(rank, nranks, cudaDevice int, uid uintptr) [initAttrSize]byte {
	var b [initAttrSize]byte
	put32 := func(off int, v int32) { binary.NativeEndian.PutUint32(b[off:], uint32(v)) }
	put32(offAttrVersion, initAttrVersion)
	binary.NativeEndian.PutUint64(b[offAttrMPIComm:], 0)
	put32(offArgsVersion, initArgsVersion)
	put32(offUIDArgsVersion, uidArgsVersion)
	binary.NativeEndian.PutUint64(b[offUIDArgsID:], uint64(uid))
	put32(offUIDArgsMyRank, int32(rank))
	put32(offUIDArgsNRanks, int32(nranks))
	put32(offCUDADeviceID, int32(cudaDevice))
	return b
}

// Error is an NVSHMEM call that returned a nonzero status.
type Error struct {
	Call string // e.g. "nvshmemx_hostlib_init_attr"
	Code int    // the returned status
}

// statusNames are nvshmemx_status's names (nvshmemx_error.h).
var statusNames = []string{
	"NVSHMEMX_SUCCESS", "NVSHMEMX_ERROR_INVALID_VALUE", "NVSHMEMX_ERROR_OUT_OF_MEMORY",
	"NVSHMEMX_ERROR_NOT_SUPPORTED", "NVSHMEMX_ERROR_SYMMETRY", "NVSHMEMX_ERROR_GPU_NOT_SELECTED",
	"NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED", "NVSHMEMX_ERROR_INTERNAL",
}

func (e *Error) Error() string {
	name := "unknown status"
	if e.Code >= 0 && e.Code < len(statusNames) {
		name = statusNames[e.Code]
	}
	return fmt.Sprintf("nvshmem: %s returned %d (%s); NVSHMEM_DEBUG=WARN shows its reason", e.Call, e.Code, name)
}

// Is matches NVSHMEMX_ERROR_INVALID_VALUE to hcerr.ErrInvalidArgument and
// NVSHMEMX_ERROR_NOT_SUPPORTED to hcerr.ErrNotSupported.
func (e *Error) Is(target error) bool {
	switch target {
	case hcerr.ErrInvalidArgument:
		return e.Code == 1
	case hcerr.ErrNotSupported:
		return e.Code == 3
	}
	return false
}

// CUDAError is a CUDA driver call this package made around NVSHMEM
// (retaining the device's primary context, making it current) that failed.
type CUDAError = dl.CUDAError

// The environment variables this package reads or sets.
const (
	// EnvLib names a libnvshmem_host.so.3 to try before any other.
	EnvLib = "HIERCOLL_NVSHMEM_LIB"

	envDisableNVLS = "NVSHMEM_DISABLE_NVLS"
	envUIDPlugin   = "NVSHMEM_BOOTSTRAP_UID_PLUGIN"
)

const (
	soname    = "libnvshmem_host.so.3"
	uidPlugin = "nvshmem_bootstrap_uid.so.3"
)

// wheelPath is where the PyTorch wheel puts the host library, under site-packages.
var wheelPath = filepath.Join("nvidia", "nvshmem", "lib", soname)

// nvshmemBool reads a boolean the way NVSHMEM does (nvshmemi_getenv_bool):
// set and starting with 0, n, N, f or F is false; any other set value,
// including the empty string, is true.
func nvshmemBool(v string) bool {
	return v == "" || !strings.ContainsRune("0nNfF", rune(v[0]))
}

// nvlsOff makes sure NVSHMEM will not use NVLink multicast:
// NVSHMEM_DISABLE_NVLS is set to 1 when unset, kept when NVSHMEM reads it as
// true, and refused when it reads as false.
var nvlsOff = dl.SafeEnv{Pkg: "nvshmem", Lib: "NVSHMEM", Name: envDisableNVLS, Off: "1", Safe: nvshmemBool}

// pluginEnv points NVSHMEM at the unique-id bootstrap plugin in dir, the
// directory the host library was loaded from, unless the variable is set or
// the plugin is not there. It returns the path it set ("" if none).
func pluginEnv(dir string, lookup func(string) (string, bool), set func(k, v string) error) (string, error) {
	if dir == "" {
		return "", nil
	}
	if _, ok := lookup(envUIDPlugin); ok {
		return "", nil
	}
	p := filepath.Join(dir, uidPlugin)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", nil
	}
	if err := set(envUIDPlugin, p); err != nil {
		return "", fmt.Errorf("nvshmem: setting %s: %w", envUIDPlugin, err)
	}
	return p, nil
}

// candidates lists the libraries Load tries, in order, and the site-packages
// directories searched for the wheel's copy.
func candidates() (libs, searched []string) { return dl.Candidates(EnvLib, soname, wheelPath) }

// SitePackages returns the Python package directories searched for the
// wheel's copy of the library (see dl.SitePackages).
func SitePackages() []string { return dl.SitePackages() }

// errNotLoaded reports a library that could not be loaded, naming what was tried.
func errNotLoaded(libs, searched []string, cause error) error {
	where := "no site-packages directory found"
	if len(searched) > 0 {
		where = "site-packages searched: " + strings.Join(searched, ", ")
	}
	return fmt.Errorf("nvshmem: cannot load the NVSHMEM host library (tried %s; %s for %s; set %s to its path): %w: %w",
		strings.Join(libs, ", "), where, wheelPath, EnvLib, hcerr.ErrNotSupported, cause)
}

// errNoCgo is what every call returns in a binary built without cgo.
var errNoCgo = errors.New("nvshmem: this binary was built without cgo (CGO_ENABLED=0), so it cannot load NVSHMEM")
