package bootstrap

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Local returns the Comms of an in-process world of shape.Nodes ×
// shape.LocalSize goroutine ranks, indexed by rank. A collective whose
// context has no deadline is bounded by DefaultTimeout; once a collective
// fails on a rank, that rank's Comm stays failed (its sequence of
// collectives no longer lines up with the others').
func Local(shape Shape) ([]Comm, error) {
	if shape.Nodes <= 0 || shape.LocalSize <= 0 {
		return nil, fmt.Errorf("bootstrap: world shape %v: %w", shape, hcerr.ErrInvalidArgument)
	}
	hub := &hub{size: shape.World(), rounds: map[uint64]*round{}}
	comms := make([]Comm, hub.size)
	for r := range comms {
		comms[r] = &local{hub: hub, rank: r, lws: shape.LocalSize}
	}
	return comms, nil
}

type hub struct {
	size   int
	mu     sync.Mutex
	rounds map[uint64]*round
}

type round struct {
	op      string // "all-gather" or "barrier": every rank must agree
	blobs   [][]byte
	arrived []bool
	count   int
	readers int
	done    chan struct{}
	bad     error // a rank called a different collective
}

type local struct {
	hub  *hub
	rank int
	lws  int

	mu     sync.Mutex // serialises this rank's collectives
	seq    uint64
	failed error
	closed bool
}

func (c *local) Rank() int      { return c.rank }
func (c *local) Size() int      { return c.hub.size }
func (c *local) LocalRank() int { return c.rank % c.lws }
func (c *local) LocalSize() int { return c.lws }

func (c *local) AllGather(ctx context.Context, blob []byte) ([][]byte, error) {
	return c.collective(ctx, "all-gather", blob)
}

func (c *local) Barrier(ctx context.Context) error {
	_, err := c.collective(ctx, "barrier", nil)
	return err
}

func (c *local) collective(ctx context.Context, op string, blob []byte) ([][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, hcerr.ErrClosed)
	case c.failed != nil:
		return nil, fmt.Errorf("bootstrap: rank %d: %s after an earlier failure: %w", c.rank, op, c.failed)
	case len(blob) > MaxBlob:
		return nil, fmt.Errorf("bootstrap: rank %d: all-gather blob of %d bytes exceeds %d: %w", c.rank, len(blob), MaxBlob, hcerr.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bootstrap: rank %d: %s: %w", c.rank, op, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	out, err := c.hub.join(ctx, c.seq, op, c.rank, blob)
	c.seq++
	if err != nil {
		c.failed = err
	}
	return out, err
}

func (h *hub) join(ctx context.Context, seq uint64, op string, rank int, blob []byte) ([][]byte, error) {
	start := time.Now()
	h.mu.Lock()
	r := h.rounds[seq]
	if r == nil {
		r = &round{op: op, blobs: make([][]byte, h.size), arrived: make([]bool, h.size), done: make(chan struct{})}
		h.rounds[seq] = r
	}
	if r.op != op && r.bad == nil {
		r.bad = fmt.Errorf("bootstrap: collective %d: rank %d called %s while others called %s: %w", seq, rank, op, r.op, hcerr.ErrInvalidArgument)
	}
	r.blobs[rank] = append([]byte(nil), blob...)
	r.arrived[rank] = true
	r.count++
	if r.count == h.size {
		close(r.done)
	}
	h.mu.Unlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		h.mu.Lock()
		var missing []string
		var ranks []int
		for i, ok := range r.arrived {
			if !ok {
				missing = append(missing, fmt.Sprint(i))
				ranks = append(ranks, i)
			}
		}
		h.mu.Unlock()
		if len(missing) == 0 { // everyone arrived just now
			break
		}
		if ctx.Err() == context.DeadlineExceeded {
			return nil, &Error{Rank: rank, Op: fmt.Sprintf("%s %d", op, seq), Ranks: ranks, Err: hcerr.ErrTimeout,
				Reason: fmt.Sprintf("ranks %s never arrived within %v", strings.Join(missing, ","), time.Since(start).Round(time.Millisecond))}
		}
		return nil, fmt.Errorf("bootstrap: rank %d: %s %d: ranks %s had not arrived: %w", rank, op, seq, strings.Join(missing, ","), ctx.Err())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.bad != nil {
		return nil, r.bad
	}
	out := make([][]byte, h.size)
	for i, b := range r.blobs {
		out[i] = append([]byte(nil), b...)
	}
	r.readers++
	if r.readers == h.size {
		delete(h.rounds, seq)
	}
	return out, nil
}

func (c *local) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
