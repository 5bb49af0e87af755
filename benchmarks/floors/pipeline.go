package floors

import (
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

// pipeSlots is the landing slots per peer of the pipelined reads, as the
// pull engine's copy-engine path has them.
const pipeSlots = 3

// pipeline is one form of the copy engine's pulls in chunks, as the pull
// engine makes them (intranode/pull/cepull.go), taken apart: every rank
// reads a part of Bytes/(n-1) from each peer's heap in chunks of a quarter
// part into pipeSlots slots per peer of its own heap.
type pipeline struct {
	streams int  // copy streams: 1, or one per peer
	sumSMs  int  // each chunk summed with the own rows on this many SMs (0: no sums)
	ordered bool // the sums wait for their chunk's copies, a slot's copies for its last sum
}

func (p pipeline) String() string {
	s := fmt.Sprintf("CE reads in chunks, %d stream(s)", p.streams)
	switch {
	case p.sumSMs == 0:
		s += ", no sums"
	case p.ordered:
		s += fmt.Sprintf(", each chunk summed once landed (%d SMs)", p.sumSMs)
	default:
		s += fmt.Sprintf(", sums beside, unordered (%d SMs)", p.sumSMs)
	}
	return s
}

// openPipeline makes the pipeline's events: per slot the end of its sum,
// and of its copies on each copy stream.
func (l *lab) openPipeline() error {
	for range pipeSlots * (l.n + 1) {
		ev, err := l.r.Dev.NewEvent()
		if err != nil {
			return err
		}
		l.pipeEvents = append(l.pipeEvents, ev)
	}
	return nil
}

func (l *lab) closePipeline() error {
	var errs []error
	for _, ev := range l.pipeEvents {
		errs = append(errs, ev.Close())
	}
	return errors.Join(errs...)
}

// pipelined enqueues one iteration of p: the sums on streams[0], the
// copies on streams[1..p.streams].
func (l *lab) pipelined(p pipeline) func() error {
	n, me := l.n, l.me
	part := l.part()
	chunk := max(4096, part/4&^4095)
	// The landing slots lie in a receive slot nobody reads.
	base := l.heap.At(me, l.recv).Add(int64((me+1)%n) * l.o.Bytes)
	landing := func(slot, i int) device.Ptr { return base.Add(int64(slot*(n-1)+i-1) * chunk) }
	reduced := l.pipeEvents[:pipeSlots]
	landed := func(slot, j int) device.Event { return l.pipeEvents[pipeSlots+slot*n+j] }
	s0, copies := l.streams[0], l.streams[1:1+p.streams]
	return func() error {
		for k, c0 := 0, int64(0); c0 < part; k, c0 = k+1, c0+chunk {
			m, slot := min(chunk, part-c0), k%pipeSlots
			for j, c := range copies {
				if p.ordered && k >= pipeSlots {
					if err := c.WaitEvent(reduced[slot]); err != nil {
						return err
					}
				}
				for i := j + 1; i < n; i += len(copies) {
					q := (me + i) % n
					if err := l.r.Dev.Copy(c, landing(slot, i), l.slot(q, q).Add(c0), m); err != nil {
						return err
					}
				}
				if !p.ordered {
					continue
				}
				if err := landed(slot, j).Record(c); err != nil {
					return err
				}
				if err := s0.WaitEvent(landed(slot, j)); err != nil {
					return err
				}
			}
			if p.sumSMs == 0 {
				continue
			}
			b := kernels.Blocks{Src: landing(slot, 1).Add(-chunk), Stride: chunk / 2, N: n, Count: m / 2, Self: 0, SelfSrc: l.src.Add(c0)}
			if err := kernels.LaunchReduce(l.r.Dev, s0, dtype.BF16, 2*p.sumSMs, l.block(3).Add(c0), b); err != nil {
				return err
			}
			if p.ordered {
				if err := reduced[slot].Record(s0); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// pipelines measures the pipeline's forms.
func (l *lab) pipelines() error {
	if l.n < 2 || !l.mapped {
		return nil
	}
	per := l.n - 1
	forms := []pipeline{{per, 0, false}, {per, 32, true}, {per, 8, true}, {per, 32, false}}
	if per > 1 {
		forms = append(forms, pipeline{1, 0, false}, pipeline{1, 32, true})
	}
	for _, p := range forms {
		if err := l.measure(p.String(), int64(l.n-1)*l.part(), true, l.pipelined(p)); err != nil {
			return err
		}
	}
	return nil
}
