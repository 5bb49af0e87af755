// Package device is the backend seam of hiercoll: the few things a
// collective needs from a GPU, small enough that the CUDA backend maps each
// call to one driver call and the CPU backend (device/sim) can model each one
// faithfully with host memory and goroutines.
//
// Everything above this package (symm, intranode, internode, rs2d) is written
// once against these interfaces and never imports a backend.
//
// Data flows through Ptr values: device addresses. A Ptr obtained from Alloc is
// owned by this device; a Ptr obtained from OpenPeer is a view of another
// rank's allocation (CUDA: an IPC mapping over NVLink; sim: the same host
// memory). Work is queued on Streams and runs in order on each stream; Events
// and WaitValue32 are the only ways one stream waits for another (or for
// another rank). Host-side waits (Stream.Synchronize, Event.Synchronize) are
// bounded by a context and fail with ErrTimeout, never hang.
package device

import (
	"context"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Ptr is a device address. Arithmetic on it is plain byte offsets.
type Ptr uint64

// Add returns p advanced by off bytes.
func (p Ptr) Add(off int64) Ptr { return Ptr(int64(p) + off) }

// String prints the address in hex.
func (p Ptr) String() string { return fmt.Sprintf("0x%x", uint64(p)) }

// Cmp is the comparison of a stream wait-value (values as in
// cuStreamWaitValue32: GEQ compares cyclically, (int32)(*addr-v) >= 0).
type Cmp uint32

// The wait comparisons used by hiercoll.
const (
	GEQ Cmp = 0
	EQ  Cmp = 1
)

// String names the comparison.
func (c Cmp) String() string {
	switch c {
	case GEQ:
		return ">="
	case EQ:
		return "=="
	}
	return fmt.Sprintf("cmp(%d)", uint32(c))
}

// Holds reports whether the word value w satisfies "w cmp v".
func (c Cmp) Holds(w, v uint32) bool {
	switch c {
	case GEQ:
		return int32(w-v) >= 0
	case EQ:
		return w == v
	}
	return false
}

// Priority of a stream. The reduction stream runs at High so that its kernel
// is scheduled ahead of a GEMM it overlaps.
type Priority int

// Stream priorities.
const (
	Normal Priority = iota
	High
)

// Word names a 32-bit word a stream waits on, for the wait itself and for the
// error that reports it when it never arrives.
type Word struct {
	Addr  Ptr
	Label string // e.g. "node barrier slot of rank 3"
}

// String is the word as a timeout names it: its label and address.
func (w Word) String() string { return fmt.Sprintf("%s (word %v)", w.Label, w.Addr) }

// Device is one GPU (or one simulated GPU) as used by one rank.
type Device interface {
	// Name identifies the device in messages: "cuda:0 (NVIDIA H200)", "sim:3".
	Name() string

	// Alloc returns size bytes of device memory, 256-byte aligned, not zeroed.
	Alloc(size int64) (Ptr, error)
	// Free releases memory from Alloc.
	Free(p Ptr) error
	// CopyToDevice and CopyToHost are synchronous host transfers.
	CopyToDevice(dst Ptr, src []byte) error
	CopyToHost(dst []byte, src Ptr) error
	// AddressRange returns the allocation (own or peer view) that contains p,
	// so callers can check that a buffer is large enough before using it.
	AddressRange(p Ptr) (base Ptr, size int64, err error)

	// ExportMem returns a handle other ranks on the same host pass to OpenPeer.
	ExportMem(p Ptr) ([]byte, error)
	// OpenPeer maps another rank's exported allocation and returns its address
	// here. ClosePeer unmaps it.
	OpenPeer(handle []byte) (Ptr, error)
	ClosePeer(p Ptr) error

	// NewStream creates a stream; StreamFromHandle wraps a stream owned by the
	// caller (a CUDA stream from PyTorch): closing the wrapper leaves it alive.
	NewStream(p Priority) (Stream, error)
	StreamFromHandle(h uintptr) (Stream, error)
	// NewEvent creates an event that orders and reports completion (Record,
	// Stream.WaitEvent, Synchronize, Done) but cannot time: Since fails.
	// NewTimedEvent creates one that also times; recording it costs the
	// host more (CUDA: about 1.5 µs against 0.35, BenchmarkHostCall).
	NewEvent() (Event, error)
	NewTimedEvent() (Event, error)

	// Copy enqueues a device-to-device copy of n bytes on s, done by the copy
	// engine; dst and src may be peer views.
	Copy(s Stream, dst, src Ptr, n int64) error
	// Memset32 enqueues writing count 32-bit words of value v at dst.
	Memset32(s Stream, dst Ptr, v uint32, count int64) error
	// WaitValue32 blocks s until the word satisfies cmp v. The CPU backend
	// bounds the wait and fails the stream with a *TimeoutError naming w.
	WaitValue32(s Stream, w Word, cmp Cmp, v uint32) error
	// WriteValue32 enqueues writing v to the word at addr (local or peer),
	// ordered after all earlier work on s and visible to its readers after it.
	WriteValue32(s Stream, addr Ptr, v uint32) error
	// Launch enqueues kernel k on s with grid blocks.
	Launch(s Stream, k *Kernel, grid int, args ...any) error
	// Prepare makes k ready to launch (compiled, loaded) without enqueueing
	// anything. Loading a module may wait for work already queued on the
	// device, such as a stream waiting for a peer that is gone, so a
	// collective prepares its kernels before it enqueues any wait.
	Prepare(k *Kernel) error

	// Info reports what this device is and can do.
	Info() Info

	// Close releases the device's own resources (not what the caller owns).
	Close() error
}

// Stream is an ordered queue of device work.
type Stream interface {
	// WaitEvent makes later work on this stream wait for the event's last record.
	WaitEvent(e Event) error
	// Synchronize waits until all work queued so far has run, bounded by ctx.
	// It returns the stream's error (a failed wait, a kernel fault) if any.
	Synchronize(ctx context.Context) error
	// Handle is the native handle (a CUstream); 0 on the CPU backend's
	// default stream and where there is none.
	Handle() uintptr
	// Close destroys the stream (after its work has drained).
	Close() error
}

// Event marks a point in a stream.
type Event interface {
	// Record marks the current end of s.
	Record(s Stream) error
	// Synchronize waits until the recorded work has run, bounded by ctx.
	Synchronize(ctx context.Context) error
	// Done reports whether the recorded work has run (and its error, if it failed).
	Done() (bool, error)
	// Since returns the time between an earlier event's point and this
	// one's; both must come from NewTimedEvent.
	Since(earlier Event) (time.Duration, error)
	Close() error
}

// Info is what a backend reports of its device.
type Info struct {
	Backend     string // "cuda" or "sim"
	Ordinal     int    // device index on the host
	Model       string // "NVIDIA H200"
	SMs         int    // streaming multiprocessors (sim: worker goroutines)
	CopyEngines int
	HostID      string // ranks with the same HostID can OpenPeer each other
	Multicast   bool   // the device reports NVLink multicast support (MULTICAST_SUPPORTED); see AllowMulticast
	// PageBytes is the large page of device allocations (cuda: 2 MiB):
	// the copy engine reads a peer's allocation that is not a whole number
	// of them markedly slower (benchmarks/RESULTS.md). 0: no such pages.
	PageBytes int64
}

// The errors every backend and layer wraps (internal/errs), re-exported
// where users of the seam meet them, so callers can tell them apart with
// errors.Is.
var (
	ErrNotSupported    = hcerr.ErrNotSupported
	ErrInvalidArgument = hcerr.ErrInvalidArgument
	ErrTimeout         = hcerr.ErrTimeout
	ErrPeer            = hcerr.ErrPeer
	ErrClosed          = hcerr.ErrClosed
)

// StreamSynchronize and EventSynchronize are TimeoutError.What when a host
// wait on a stream or an event ran out of time.
const (
	StreamSynchronize = hcerr.StreamSynchronize
	EventSynchronize  = hcerr.EventSynchronize
)

// TimeoutError is a wait that did not complete in time (hcerr.TimeoutError):
// for a wait-value, Word is the Word waited on and Cmp its comparison.
type TimeoutError = hcerr.TimeoutError

// Stuck reports whether err is a host wait that ran out of time while the
// device work it waited for was still running (not work that failed).
func Stuck(err error) bool { return hcerr.Stuck(err) }
