// Package hcerr holds the errors every layer of hiercoll wraps: the sentinels
// callers tell apart with errors.Is, and the error of a bounded wait that ran
// out. Users meet them through the packages they call (device and rs2d
// re-export them); the layers below those (bootstrap, launch, native, topo)
// import this package instead of the device seam.
package hcerr

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The sentinels.
var (
	ErrNotSupported    = errors.New("not supported")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrTimeout         = errors.New("timed out")
	ErrPeer            = errors.New("peer failed")
	ErrClosed          = errors.New("closed")
)

// StreamSynchronize and EventSynchronize are TimeoutError.What when a host
// wait on a stream or an event ran out of time: the work is still running on
// the device.
const (
	StreamSynchronize = "stream synchronize"
	EventSynchronize  = "event synchronize"
)

// TimeoutError is a wait that did not complete in time: it names what was
// waited on, and where, so that a missing rank can be identified.
type TimeoutError struct {
	Stream string // which stream waited
	// Word is the word of a wait-value (a device.Word: its label and
	// address), Cmp its comparison, Want the value waited for and Got the
	// value the word held.
	Word  fmt.Stringer
	Cmp   fmt.Stringer
	Want  uint32
	Got   uint32
	After time.Duration
	What  string // for other waits: "event", "stream synchronize"
	// Beside names other waits that were stuck when this one ran out
	// ("stream waits for word"), where the backend knows them: the rank a
	// wait was for may itself wait for the one that stalled.
	Beside []string
}

func (e *TimeoutError) Error() string {
	if e.What != "" {
		return fmt.Sprintf("%s: %s did not complete within %v", e.Stream, e.What, e.After)
	}
	s := fmt.Sprintf("%s: waited %v for %v to become %v %d; it holds %d",
		e.Stream, e.After, e.Word, e.Cmp, e.Want, e.Got)
	if len(e.Beside) > 0 {
		s += "; stuck beside it: " + strings.Join(e.Beside, "; ")
	}
	return s
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Stuck reports whether err is a host wait that ran out of time while the
// device work it waited for was still running (not work that failed).
func Stuck(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && (te.What == StreamSynchronize || te.What == EventSynchronize)
}
