package symm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// The words of both protocols across 200 calls between two ranks: rank 0
// hands rank 1 the turn (the ready flag's role) and waits for its word, as
// the call's last wait on it; rank 1 waits for the turn, as its last wait
// on it, and raises rank 0's word with the call's value.
// Under Replayable every call has the same value and the word is 0 again
// after each; under Growing it holds the last value. Then Release ends a
// wait that nobody will satisfy, for either.
func TestSignalProtocols(t *testing.T) {
	for _, proto := range []symm.Protocol{symm.Growing, symm.Replayable} {
		t.Run(proto.String(), func(t *testing.T) {
			w := simWorld(t, bootstrap.Shape{Nodes: 1, LocalSize: 2}, false)
			ctx := testCtx(t)
			var l symm.Layout
			pad := l.AddPad("test signals", 2) // word 0: the signal; word 1: the turn, in rank 1's pad
			err := w.Run(ctx, func(ctx context.Context, r world.Rank) error {
				h, err := symm.New(ctx, r.Comm, r.Dev, &l)
				if err != nil {
					return err
				}
				defer h.Close()
				sig := h.Signals(pad, proto, func(owner, i int) string { return fmt.Sprintf("word %d of rank %d", i, owner) })
				s, err := r.Dev.NewStream(device.Normal)
				if err != nil {
					return err
				}
				defer s.Close()
				me := r.Comm.Rank()
				var e symm.Epoch
				for call := 0; call < 200; call++ {
					e = proto.Next(e)
					if me == 1 {
						if err := sig.At(1, 1).WaitLast(s, uint32(e)); err != nil { // my turn
							return err
						}
						if err := sig.At(0, 0).Raise(s, uint32(e)); err != nil {
							return err
						}
					} else {
						if err := sig.At(1, 1).Raise(s, uint32(e)); err != nil { // rank 1's turn
							return err
						}
						if err := sig.At(0, 0).WaitLast(s, uint32(e)); err != nil {
							return err
						}
					}
					if err := s.Synchronize(ctx); err != nil {
						return fmt.Errorf("call %d: %w", call, err)
					}
					if proto == symm.Replayable && e != symm.ReplayEpoch {
						return fmt.Errorf("call %d has epoch %d under Replayable", call, e)
					}
				}
				if err := r.Comm.Barrier(ctx); err != nil {
					return err
				}
				got := make([]byte, 8)
				if err := r.Dev.CopyToHost(got, sig.At(me, 0).Addr()); err != nil {
					return err
				}
				// Each rank's word that it waits on: the last value, or reset.
				last := uint32(e)
				if proto == symm.Replayable {
					last = 0
				}
				want := [2]uint32{last, 0}
				if me == 1 {
					want = [2]uint32{0, last}
				}
				words := [2]uint32{binary.LittleEndian.Uint32(got), binary.LittleEndian.Uint32(got[4:])}
				if words != want {
					return fmt.Errorf("rank %d's words after 200 calls: %v, want %v", me, words, want)
				}
				// A wait nobody satisfies, ended by Release on a stream of its own.
				if err := sig.At(me, 0).WaitLast(s, uint32(proto.Next(e))+5); err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
				if err := s.Synchronize(short); !device.Stuck(err) {
					return fmt.Errorf("an unsatisfied wait: %v, want it stuck", err)
				}
				rel, err := r.Dev.NewStream(device.High)
				if err != nil {
					return err
				}
				defer rel.Close()
				if err := sig.Release(rel, uint32(e)); err != nil {
					return err
				}
				return s.Synchronize(ctx)
			})
			require.NoError(t, err)
		})
	}
}
