package gemmrs

import "github.com/seed12530e24/hiercoll/internal/hcerr"

// The errors a call returns wrap one of these; tell them apart with
// errors.Is (they are device's and every other package's too).
var (
	ErrNotSupported    = hcerr.ErrNotSupported    // the device, backend or configuration cannot do it
	ErrInvalidArgument = hcerr.ErrInvalidArgument // an argument or Config value is wrong
	ErrTimeout         = hcerr.ErrTimeout         // a bounded wait ran out (a rank never came)
	ErrPeer            = hcerr.ErrPeer            // another rank failed
	ErrClosed          = hcerr.ErrClosed          // the context was closed, or cannot be used again
)

// TimeoutError is a wait that did not complete in time: it names what was
// waited on (the signal word, its value), so that a missing rank can be
// identified (errors.As).
type TimeoutError = hcerr.TimeoutError
