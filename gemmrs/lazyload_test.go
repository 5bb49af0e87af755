package gemmrs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemmrs"
	"github.com/seed12530e24/hiercoll/world"
)

// lazyLoader is a device whose Matmul behaves like cuBLAS under CUDA's lazy
// module loading: the first GEMM of a kind (rows, alignment of C) loads its
// kernel, and the load waits until every stream of the device is idle. A
// load that cannot finish (a stream waits for a peer that waits for this
// rank's host) fails the GEMM instead of hanging the test.
type lazyLoader struct {
	device.Device
	mm device.Matmul

	mu      sync.Mutex
	streams []device.Stream
	loaded  map[[2]int64]bool
}

func (l *lazyLoader) NewStream(p device.Priority) (device.Stream, error) {
	s, err := l.Device.NewStream(p)
	if err == nil {
		l.mu.Lock()
		l.streams = append(l.streams, s)
		l.mu.Unlock()
	}
	return s, err
}

func (l *lazyLoader) Gemm(s device.Stream, g device.GemmSpec) error {
	key := [2]int64{int64(g.M), int64(g.C) % 256}
	l.mu.Lock()
	load := !l.loaded[key]
	streams := append([]device.Stream(nil), l.streams...)
	l.mu.Unlock()
	if load {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, st := range streams {
			if err := st.Synchronize(ctx); err != nil {
				return fmt.Errorf("loading the kernel of a %d-row GEMM waited for queued work that never ended (with CUDA this hangs): %w", g.M, err)
			}
		}
		l.mu.Lock()
		l.loaded[key] = true
		l.mu.Unlock()
	}
	return l.mm.Gemm(s, g)
}

// TestFirstGemmNotBehindPeerWaits: every rank's first overlapped call, and
// a call with a new M, enqueue block GEMMs of a new kind; on a device that
// loads kernels lazily, behind every queued stream (seen with cuBLAS on
// H200s), that must not deadlock the ranks: nothing the GEMM stream or
// the streams before it wait for depends on this rank's host.
func TestFirstGemmNotBehindPeerWaits(t *testing.T) {
	const dt = dtype.BF16
	shape := bootstrap.Shape{Nodes: 1, LocalSize: 2}
	ws := shape.World()
	maxM, n, k := 8*ws, 16, 8
	ms := []int{maxM, maxM, maxM / 2}
	problems := make([]*problems, len(ms))
	for i, m := range ms {
		problems[i] = newProblems(dt, ws, m, n, k)
	}
	w := simWorld(t, shape, 5*time.Second)
	err := w.Run(testCtx(t), func(ctx context.Context, r world.Rank) (err error) {
		mm, err := device.MatmulOf(r.Dev)
		if err != nil {
			return err
		}
		dev := &lazyLoader{Device: r.Dev, mm: mm, loaded: map[[2]int64]bool{}}
		g, err := gemmrs.New(ctx, r.Comm, dev, baseConfig(dt, maxM, n, k))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		rb, err := newRankBufs(dev, dt, maxM, n, k, ws)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, rb.close()) }()
		for call, m := range ms {
			ps := problems[call]
			p := ps.get(call)
			got, err := runCall(ctx, g, rb, ps, p, r.Comm.Rank(), gemmrs.Overlap)
			if err != nil {
				return fmt.Errorf("call %d (M=%d): %w", call, m, err)
			}
			if _, err := ps.compare(p, r.Comm.Rank(), shape.Nodes, got); err != nil {
				return fmt.Errorf("call %d (M=%d): %w", call, m, err)
			}
		}
		return nil
	})
	require.NoError(t, err)
}
