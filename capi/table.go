package main

import (
	"fmt"
	"sync"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/producer"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// table holds every object handed out through the ABI, by handle. Its mutex
// also guards the mutable fields of the objects (stream caches, allocation
// sets, context counts), so that the hot path takes one lock once.
var table = struct {
	mu      sync.Mutex
	next    int64
	objects map[int64]any // *rankObj or *rs2dObj
}{objects: map[int64]any{}}

// Handle kinds, for messages.
const (
	kindWorld = "world"
	kindRS2D  = "rs2d context"
)

// rankObj is one rank of a world: what hc_init_from_env or hc_init_sim
// hands out.
type rankObj struct {
	rank    world.Rank
	shape   bootstrap.Shape
	backend int  // backendSim or backendCUDA
	process bool // the process's rank from hc_init_from_env

	// Guarded by table.mu.
	streams  map[uint64]streamRef    // by handle: wrapped foreign CUstreams and our own
	foreign  int                     // how many entries of streams are foreign wrappers
	allocs   map[device.Ptr]struct{} // from hc_sim_alloc
	contexts int                     // live (or being created) rs2d contexts
	simSeq   uint64                  // serial of simulated stream handles
	closed   bool
}

// streamRef is a stream and whether the library owns it (created it, and
// closes it) or only wraps a caller's CUstream.
type streamRef struct {
	s     device.Stream
	owned bool
}

// rs2dObj is one ReduceScatter2D context.
type rs2dObj struct {
	rs *rs2d.Context
	// seq, with GEMM overlap, is the context of the small products'
	// reduce-scatter after their GEMM (matmul.go): the default engine
	// without GEMM overlap, whose symmetric input hc_rs2d_input gives.
	seq   *rs2d.Context
	owner *rankObj
	world int // ranks
	n     int
	dt    dtype.DType

	mmMu  sync.Mutex           // guards mm and mmErr (matmul.go)
	mm    *producer.Overlapped // the own GEMM, from the first matmul call
	mmErr error                // why it could not be made
}

// The backends of hc_world_device.
const (
	backendSim  = 1
	backendCUDA = 2
)

// simStreamTag marks handles of simulated streams (there is no native
// handle to give out); the low bits count.
const simStreamTag = uint64(0x51_0000) << 32

// maxForeignStreams bounds the cache of wrapped foreign streams; past it
// the cache starts over (wrappers hold no resources).
const maxForeignStreams = 1024

func newRankObj(r world.Rank, shape bootstrap.Shape, process bool) *rankObj {
	backend := backendSim
	if r.Dev.Info().Backend == "cuda" {
		backend = backendCUDA
	}
	return &rankObj{
		rank: r, shape: shape, backend: backend, process: process,
		streams: map[uint64]streamRef{}, allocs: map[device.Ptr]struct{}{},
	}
}

// register adds o to the table and returns its handle (never 0, never reused).
func register(o any) int64 {
	table.mu.Lock()
	defer table.mu.Unlock()
	table.next++
	table.objects[table.next] = o
	return table.next
}

// lookup returns the object of handle h if it is of type T.
func lookup[T any](h int64, kind string) (T, error) {
	table.mu.Lock()
	o, ok := table.objects[h].(T)
	table.mu.Unlock()
	if !ok {
		return o, badHandle(h, kind)
	}
	return o, nil
}

func badHandle(h int64, kind string) error {
	return fmt.Errorf("hiercoll: %d is not the handle of a live %s: %w", h, kind, device.ErrInvalidArgument)
}

// streamLocked returns the stream of handle h for rank r, wrapping and
// caching a foreign CUstream on first use. table.mu must be held.
func (r *rankObj) streamLocked(h uint64) (device.Stream, error) {
	if ref, ok := r.streams[h]; ok {
		return ref.s, nil
	}
	if r.closed {
		return nil, fmt.Errorf("hiercoll: world of rank %d is closed: %w", r.rank.Comm.Rank(), device.ErrClosed)
	}
	if r.backend == backendSim {
		if h != 0 {
			return nil, fmt.Errorf("hiercoll: stream 0x%x was not made by hc_stream_create for simulated rank %d: %w",
				h, r.rank.Comm.Rank(), device.ErrInvalidArgument)
		}
		// The simulated rank's default stream, made on first use.
		s, err := r.rank.Dev.NewStream(device.Normal)
		if err != nil {
			return nil, err
		}
		r.streams[0] = streamRef{s: s, owned: true}
		return s, nil
	}
	s, err := r.rank.Dev.StreamFromHandle(uintptr(h))
	if err != nil {
		return nil, err
	}
	if r.foreign >= maxForeignStreams {
		for k, ref := range r.streams {
			if !ref.owned {
				delete(r.streams, k)
			}
		}
		r.foreign = 0
	}
	r.streams[h] = streamRef{s: s}
	r.foreign++
	return s, nil
}
