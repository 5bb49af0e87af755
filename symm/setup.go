package symm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
)

// setUp is the collective part of mapping peers' memory (a Heap, a Window):
// every rank's record (me, which says whether the rank failed so far:
// localErr) is all-gathered; if no rank's record is bad, open maps the
// peers from them; and the ranks agree, so that none keeps what a peer
// gave up on. On failure release undoes this rank's work and every rank
// returns an error: its own, or one naming the rank that failed (wrapping
// device.ErrPeer). what names the thing in messages ("heap").
func setUp[T interface{ encode() []byte }](ctx context.Context, comm bootstrap.Comm, what string, me T, localErr error,
	decode func([]byte) (T, error), open func([]T) error, release func()) error {
	rank := comm.Rank()
	blobs, err := comm.AllGather(ctx, me.encode())
	if err != nil {
		release()
		return fmt.Errorf("symm: rank %d: exchanging %s handles: %w", rank, what, err)
	}
	infos := make([]T, len(blobs))
	for r, b := range blobs {
		if infos[r], err = decode(b); err != nil {
			localErr = errors.Join(localErr, fmt.Errorf("symm: rank %d sent a bad %s record: %w", r, what, err))
		}
	}
	if localErr == nil {
		localErr = open(infos)
	}
	if _, err := bootstrap.Agree(ctx, comm, localErr, nil); err != nil {
		release()
		if localErr != nil {
			return localErr
		}
		var pe *bootstrap.PeerError
		if errors.As(err, &pe) {
			return fmt.Errorf("symm: rank %d could not set up its %s (%v): %w", pe.Ranks[0], what, err, device.ErrPeer)
		}
		return fmt.Errorf("symm: rank %d: agreeing on the %s: %w", rank, what, err)
	}
	return nil
}

// record builds the bytes a rank sends in setUp: length-prefixed byte
// strings, 64-bit words and flags, in the order its reader takes them.
type record []byte

func (r record) bytes(x []byte) record {
	return append(binary.LittleEndian.AppendUint32(r, uint32(len(x))), x...)
}

func (r record) word(v int64) record { return binary.LittleEndian.AppendUint64(r, uint64(v)) }

func (r record) flag(v bool) record {
	if v {
		return append(r, 1)
	}
	return append(r, 0)
}

// reader takes a record apart; a short or overlong record makes err say so.
type reader struct {
	b   []byte
	n   int // the record's length, for the error
	bad bool
}

func newReader(b []byte) *reader { return &reader{b: b, n: len(b)} }

func (r *reader) bytes() []byte {
	if r.bad || len(r.b) < 4 || uint64(len(r.b)-4) < uint64(binary.LittleEndian.Uint32(r.b)) {
		r.bad = true
		return nil
	}
	n := binary.LittleEndian.Uint32(r.b)
	x := r.b[4 : 4+n]
	r.b = r.b[4+n:]
	return x
}

func (r *reader) word() int64 {
	if r.bad || len(r.b) < 8 {
		r.bad = true
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

func (r *reader) flag() bool {
	if r.bad || len(r.b) < 1 {
		r.bad = true
		return false
	}
	v := r.b[0] != 0
	r.b = r.b[1:]
	return v
}

// err reports a record that was short or had bytes left over.
func (r *reader) err() error {
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("truncated record of %d bytes", r.n)
	}
	return nil
}
