//go:build !cgo

package nvshmem

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Lib is the loaded NVSHMEM host library; without cgo there never is one.
type Lib struct{}

// Load always fails without cgo, with an error wrapping
// hcerr.ErrNotSupported that names the candidates a cgo build would try.
func Load() (*Lib, error) {
	libs, searched := candidates()
	return nil, errNotLoaded(libs, searched, errNoCgo)
}

func unsupported(op string) error {
	return fmt.Errorf("nvshmem: %s: %w: %w", op, hcerr.ErrNotSupported, errNoCgo)
}

// Path is empty without cgo.
func (l *Lib) Path() string { return "" }

// File is empty without cgo.
func (l *Lib) File() string { return "" }

// Version fails without cgo.
func (l *Lib) Version() (major, minor, patch int, err error) {
	return 0, 0, 0, unsupported("nvshmemx_vendor_get_version_info")
}

// UniqueID fails without cgo.
func (l *Lib) UniqueID() ([]byte, error) { return nil, unsupported("nvshmemx_get_uniqueid") }

// Init fails without cgo.
func (l *Lib) Init(rank, nranks int, uid []byte, ordinal int) error {
	return unsupported("nvshmemx_hostlib_init_attr")
}

// Finalize does nothing without cgo.
func (l *Lib) Finalize() error { return nil }

// MyPE is -1 without cgo.
func (l *Lib) MyPE() int { return -1 }

// NPEs is 0 without cgo.
func (l *Lib) NPEs() int { return 0 }

// TeamMyPE is -1 without cgo.
func (l *Lib) TeamMyPE(team Team) int { return -1 }

// TeamNPEs is 0 without cgo.
func (l *Lib) TeamNPEs(team Team) int { return 0 }

// Live is 0 without cgo.
func (l *Lib) Live() int { return 0 }

// Malloc fails without cgo.
func (l *Lib) Malloc(size int64) (Ptr, error) { return 0, unsupported("nvshmem_malloc") }

// Free fails without cgo.
func (l *Lib) Free(p Ptr) error { return unsupported("nvshmem_free") }

// Ptr is 0 without cgo.
func (l *Lib) Ptr(p Ptr, pe int) Ptr { return 0 }

// PutOnStream fails without cgo.
func (l *Lib) PutOnStream(dst, src Ptr, bytes int64, pe int, stream uintptr) error {
	return unsupported("nvshmemx_putmem_on_stream")
}

// PutSignalOnStream fails without cgo.
func (l *Lib) PutSignalOnStream(dst, src Ptr, bytes int64, sig Ptr, sigVal uint64, op SignalOp, pe int, stream uintptr) error {
	return unsupported("nvshmemx_putmem_signal_on_stream")
}

// SignalWaitUntilOnStream fails without cgo.
func (l *Lib) SignalWaitUntilOnStream(sig Ptr, cmp Cmp, val uint64, stream uintptr) error {
	return unsupported("nvshmemx_signal_wait_until_on_stream")
}

// BarrierAllOnStream fails without cgo.
func (l *Lib) BarrierAllOnStream(stream uintptr) error {
	return unsupported("nvshmemx_barrier_all_on_stream")
}
