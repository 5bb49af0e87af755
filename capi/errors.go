package main

import (
	"context"
	"errors"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
)

// The return codes of hiercoll.h.
const (
	codeOK           = 0
	codeInvalid      = 1
	codeNotSupported = 2
	codeTimeout      = 3
	codePeer         = 4
	codeClosed       = 5
	codeOther        = 6
)

// codeOf maps an error to its return code by the device package's
// sentinels. An error that matches several (errors.Join of a timeout and a
// peer failure, say) gets the lowest code: invalid, not supported, timeout,
// peer, closed, in that order.
func codeOf(err error) int {
	switch {
	case err == nil:
		return codeOK
	case errors.Is(err, device.ErrInvalidArgument):
		return codeInvalid
	case errors.Is(err, device.ErrNotSupported):
		return codeNotSupported
	case errors.Is(err, device.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return codeTimeout
	case errors.Is(err, device.ErrPeer):
		return codePeer
	case errors.Is(err, device.ErrClosed):
		return codeClosed
	}
	return codeOther
}

// maxThreadErrors bounds how many threads' messages are kept.
const maxThreadErrors = 4096

// lastErrors keeps the last error message of each OS thread that called in.
//
// A Go function exported through cgo runs on the C thread that called it
// (the runtime binds that thread to an M and locks the callback's goroutine
// to it), so the thread id read inside the call is the caller's: the record
// is truly per calling thread, as errno is. Successful calls leave it alone.
// When more than maxThreadErrors threads have a message, the oldest message
// is dropped; a thread id reused after its thread exited inherits the
// message until that thread fails itself.
var lastErrors = struct {
	mu     sync.Mutex
	seq    uint64
	thread map[int]threadError
}{thread: map[int]threadError{}}

type threadError struct {
	msg string
	seq uint64 // when it was recorded, for dropping the oldest
}

// setLastError records msg for the calling thread.
func setLastError(msg string) {
	tid := threadID()
	lastErrors.mu.Lock()
	defer lastErrors.mu.Unlock()
	lastErrors.seq++
	if _, ok := lastErrors.thread[tid]; !ok && len(lastErrors.thread) >= maxThreadErrors {
		oldest, first := 0, true
		for id, e := range lastErrors.thread {
			if first || e.seq < lastErrors.thread[oldest].seq {
				oldest, first = id, false
			}
		}
		delete(lastErrors.thread, oldest)
	}
	lastErrors.thread[tid] = threadError{msg: msg, seq: lastErrors.seq}
}

// lastError returns the calling thread's last message ("" if none).
func lastError() string {
	tid := threadID()
	lastErrors.mu.Lock()
	defer lastErrors.mu.Unlock()
	return lastErrors.thread[tid].msg
}
