package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/seed12530e24/hiercoll/device"
)

// Local returns the Comms of an in-process world of shape.Nodes ×
// shape.LocalSize goroutine ranks, indexed by rank.
func Local(shape Shape) ([]Comm, error) {
	if shape.Nodes <= 0 || shape.LocalSize <= 0 {
		return nil, fmt.Errorf("bootstrap: world shape %v: %w", shape, device.ErrInvalidArgument)
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
	blobs   [][]byte
	arrived []bool
	count   int
	readers int
	done    chan struct{}
}

type local struct {
	hub    *hub
	rank   int
	lws    int
	seq    uint64
	closed bool
}

func (c *local) Rank() int      { return c.rank }
func (c *local) Size() int      { return c.hub.size }
func (c *local) LocalRank() int { return c.rank % c.lws }
func (c *local) LocalSize() int { return c.lws }

func (c *local) AllGather(ctx context.Context, blob []byte) ([][]byte, error) {
	if c.closed {
		return nil, fmt.Errorf("bootstrap: rank %d: %w", c.rank, device.ErrClosed)
	}
	if len(blob) > MaxBlob {
		return nil, fmt.Errorf("bootstrap: rank %d: all-gather blob of %d bytes exceeds %d: %w", c.rank, len(blob), MaxBlob, device.ErrInvalidArgument)
	}
	h := c.hub
	seq := c.seq
	c.seq++
	h.mu.Lock()
	r := h.rounds[seq]
	if r == nil {
		r = &round{blobs: make([][]byte, h.size), arrived: make([]bool, h.size), done: make(chan struct{})}
		h.rounds[seq] = r
	}
	r.blobs[c.rank] = append([]byte(nil), blob...)
	r.arrived[c.rank] = true
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
		for i, ok := range r.arrived {
			if !ok {
				missing = append(missing, fmt.Sprint(i))
			}
		}
		h.mu.Unlock()
		err := fmt.Errorf("bootstrap: rank %d: all-gather %d: ranks %s never arrived: %w", c.rank, seq, strings.Join(missing, ","), ctx.Err())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", err, device.ErrTimeout)
		}
		return nil, err
	}
	h.mu.Lock()
	out := make([][]byte, h.size)
	for i, b := range r.blobs {
		out[i] = append([]byte(nil), b...)
	}
	r.readers++
	if r.readers == h.size {
		delete(h.rounds, seq)
	}
	h.mu.Unlock()
	return out, nil
}

func (c *local) Barrier(ctx context.Context) error {
	_, err := c.AllGather(ctx, nil)
	return err
}

func (c *local) Close() error {
	c.closed = true
	return nil
}
