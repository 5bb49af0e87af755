// Package bootstrap is how the ranks of a job find each other before any GPU
// work: who am I (rank, local rank), how many are we, and two host-side
// collectives, an all-gather of small blobs and a barrier. Everything GPU
// memory handles, NCCL and NVSHMEM unique ids travel through AllGather.
//
// Two implementations:
//   - Local: an in-process world of goroutine ranks (tests, the CPU demo).
//   - TCP: one OS process per rank. Rank 0 serves a small rendezvous that
//     authenticates every connection, bounds what each may make it hold and
//     times out. FromEnv configures it from the torchrun variables (RANK,
//     WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT);
//     DialStore through a key-value store the job already shares (torch's).
//
// The TCP rendezvous is a star: every rank, rank 0 included, holds one
// connection to the server in rank 0's process; a collective sends the rank's
// blob up and gets every rank's blob back. Under FromEnv the server listens
// on HIERCOLL_PORT, else MASTER_PORT+1 (torchrun and torch.distributed
// already own MASTER_PORT); under DialStore on a port the kernel picks, which
// rank 0 publishes in the store.
//
// Every rank and the server prove to each other that they hold the job's
// secret, and every later frame is authenticated (see wire.go), so neither a
// stranger joining nor a process squatting on the port can take part. The
// secret comes from HIERCOLL_TOKEN (`hiercoll launch` sets a random one), from
// a private file rank 0 writes for a job on one host, or from the store; a
// job across hosts without one is refused unless HIERCOLL_INSECURE_TOKEN=1
// accepts a token anyone can compute (see EnvConfig). Every wait is bounded
// by the context or TCPConfig.Timeout, and a rank that never arrives, drops
// out or misbehaves is named in the error.
//
// Ranks are numbered node-major: rank = node*LocalSize + localRank.
package bootstrap

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Comm is one rank's handle on the job.
type Comm interface {
	Rank() int
	Size() int
	LocalRank() int
	LocalSize() int // ranks per node: local_world_size
	// AllGather returns every rank's blob, indexed by rank. Every rank must
	// call it the same number of times, in the same order.
	AllGather(ctx context.Context, blob []byte) ([][]byte, error)
	// Barrier returns once every rank has entered it.
	Barrier(ctx context.Context) error
	Close() error
}

// MaxBlob bounds one rank's AllGather contribution.
const MaxBlob = 1 << 20

// Shape is the layout of a world: nnodes × local world size.
type Shape struct {
	Nodes     int
	LocalSize int
}

// World is the number of ranks.
func (s Shape) World() int { return s.Nodes * s.LocalSize }

func (s Shape) String() string { return fmt.Sprintf("%dx%d", s.Nodes, s.LocalSize) }

// ShapeOf validates a Comm's numbering and returns its shape.
func ShapeOf(c Comm) (Shape, error) {
	size, lws := c.Size(), c.LocalSize()
	if size <= 0 || lws <= 0 {
		return Shape{}, fmt.Errorf("bootstrap: world size %d, local world size %d: %w", size, lws, hcerr.ErrInvalidArgument)
	}
	if size%lws != 0 {
		return Shape{}, fmt.Errorf("bootstrap: local world size %d does not divide world size %d: %w", lws, size, hcerr.ErrInvalidArgument)
	}
	if r := c.Rank(); r < 0 || r >= size || c.LocalRank() != r%lws {
		return Shape{}, fmt.Errorf("bootstrap: rank %d with local rank %d is not node-major in a world of %d with %d per node: %w",
			r, c.LocalRank(), size, lws, hcerr.ErrInvalidArgument)
	}
	return Shape{Nodes: size / lws, LocalSize: lws}, nil
}
