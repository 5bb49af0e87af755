//go:build !cgo

package nccl

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Lib is the loaded NCCL library; without cgo there never is one.
type Lib struct{}

// Load always fails without cgo, with an error wrapping
// hcerr.ErrNotSupported that names the candidates a cgo build would try.
func Load() (*Lib, error) {
	libs, searched := candidates()
	return nil, errNotLoaded(libs, searched, errNoCgo)
}

func unsupported(op string) error {
	return fmt.Errorf("nccl: %s: %w: %w", op, hcerr.ErrNotSupported, errNoCgo)
}

// Path is empty without cgo.
func (l *Lib) Path() string { return "" }

// Version fails without cgo.
func (l *Lib) Version() (int, error) { return 0, unsupported("ncclGetVersion") }

// UniqueID fails without cgo.
func (l *Lib) UniqueID() ([UniqueIDSize]byte, error) {
	return [UniqueIDSize]byte{}, unsupported("ncclGetUniqueId")
}

// InitRank fails without cgo.
func (l *Lib) InitRank(nranks int, id [UniqueIDSize]byte, rank int, ordinal int) (*Comm, error) {
	return nil, unsupported("ncclCommInitRank")
}

// Comm is an NCCL communicator; without cgo there never is one.
type Comm struct{}

// Size is 0 without cgo.
func (c *Comm) Size() int { return 0 }

// Rank is 0 without cgo.
func (c *Comm) Rank() int { return 0 }

// Ordinal is 0 without cgo.
func (c *Comm) Ordinal() int { return 0 }

// ReduceScatter fails without cgo.
func (c *Comm) ReduceScatter(send, recv Ptr, recvCount int64, dt dtype.DType, stream uintptr) error {
	return unsupported("ncclReduceScatter")
}

// AllReduce fails without cgo.
func (c *Comm) AllReduce(send, recv Ptr, count int64, dt dtype.DType, stream uintptr) error {
	return unsupported("ncclAllReduce")
}

// Send fails without cgo.
func (c *Comm) Send(buf Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error {
	return unsupported("ncclSend")
}

// Recv fails without cgo.
func (c *Comm) Recv(buf Ptr, count int64, dt dtype.DType, peer int, stream uintptr) error {
	return unsupported("ncclRecv")
}

// GroupStart fails without cgo.
func (c *Comm) GroupStart() error { return unsupported("ncclGroupStart") }

// GroupEnd fails without cgo.
func (c *Comm) GroupEnd() error { return unsupported("ncclGroupEnd") }

// Group fails without cgo (fn is not run).
func (c *Comm) Group(fn func() error) error { return unsupported("ncclGroupStart") }

// AsyncError fails without cgo.
func (c *Comm) AsyncError() error { return unsupported("ncclCommGetAsyncError") }

// Destroy does nothing without cgo.
func (c *Comm) Destroy() error { return nil }

// Abort does nothing without cgo.
func (c *Comm) Abort() error { return nil }
