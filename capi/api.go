package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/producer"
	"github.com/seed12530e24/hiercoll/rs2d"
	"github.com/seed12530e24/hiercoll/world"
)

// process is this process's rank in a torchrun job, joined at most once.
var process struct {
	mu     sync.Mutex // held while joining; taken before table.mu
	handle int64      // 0: not joined
}

// initFromEnv joins the job of the torchrun environment once per process.
func initFromEnv() (int64, error) {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.handle != 0 {
		return process.handle, nil
	}
	syncEnviron()
	w, err := world.Process(context.Background())
	if err != nil {
		return 0, fmt.Errorf("hiercoll: joining the job: %w", err)
	}
	process.handle = register(newRankObj(w.Ranks[0], w.Shape, true))
	return process.handle, nil
}

// initFromStore joins the job through a key-value store the caller shares
// with the other ranks (bootstrap.DialStore; rank 0 listens on host with a
// port the kernel picks), once per process like initFromEnv. The rank and
// world shape come from the torchrun variables.
func initFromStore(store bootstrap.Store, prefix, host string) (int64, error) {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.handle != 0 {
		return process.handle, nil
	}
	syncEnviron()
	cfg, err := bootstrap.EnvPlace()
	if err != nil {
		return 0, fmt.Errorf("hiercoll: joining the job through its store: %w", err)
	}
	if cfg.Rank == 0 {
		if host == "" {
			return 0, fmt.Errorf("hiercoll: rank 0 needs a host to listen on for the store rendezvous: %w", device.ErrInvalidArgument)
		}
		cfg.Addr = net.JoinHostPort(host, "0")
	}
	comm, err := bootstrap.DialStore(context.Background(), store, prefix, cfg)
	if err != nil {
		return 0, fmt.Errorf("hiercoll: joining the job through its store: %w", err)
	}
	w, err := world.Join(comm)
	if err != nil {
		return 0, fmt.Errorf("hiercoll: joining the job through its store: %w", err)
	}
	process.handle = register(newRankObj(w.Ranks[0], w.Shape, true))
	return process.handle, nil
}

// maxSimRanks bounds hc_init_sim: every rank is a set of goroutines.
const maxSimRanks = 256

// initSim makes an in-process world of simulated GPUs and returns one
// handle per rank, in rank order.
func initSim(nodes, gpus int) ([]int64, error) {
	syncEnviron() // HIERCOLL_SIM_MEMORY and the like
	if nodes < 1 || gpus < 1 || nodes*gpus > maxSimRanks {
		return nil, fmt.Errorf("hiercoll: a simulated world of %d node(s) x %d GPU(s): both must be positive and the product at most %d: %w",
			nodes, gpus, maxSimRanks, device.ErrInvalidArgument)
	}
	shape := bootstrap.Shape{Nodes: nodes, LocalSize: gpus}
	w, err := world.Sim(shape, world.SimOptions{})
	if err != nil {
		return nil, fmt.Errorf("hiercoll: %w", err)
	}
	handles := make([]int64, len(w.Ranks))
	for i, r := range w.Ranks {
		handles[i] = register(newRankObj(r, shape, false))
	}
	return handles, nil
}

// worldInfo is what hc_world_info reports.
type worldInfo struct {
	Rank, Size, LocalRank, LocalSize, Backend, Ordinal int
}

func rankInfo(h int64) (worldInfo, error) {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return worldInfo{}, err
	}
	c := r.rank.Comm
	return worldInfo{
		Rank: c.Rank(), Size: c.Size(), LocalRank: c.LocalRank(), LocalSize: c.LocalSize(),
		Backend: r.backend, Ordinal: r.rank.Dev.Info().Ordinal,
	}, nil
}

// closeWorld releases rank h and what was made for it through the ABI.
func closeWorld(h int64) error {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return err
	}
	if r.process {
		// The process rank's handle is cleared under process.mu, so a
		// concurrent hc_init_from_env either sees it live or joins anew.
		process.mu.Lock()
		defer process.mu.Unlock()
	}
	table.mu.Lock()
	if table.objects[h] != any(r) { // closed meanwhile by another thread
		table.mu.Unlock()
		return badHandle(h, kindWorld)
	}
	if r.contexts > 0 {
		table.mu.Unlock()
		return fmt.Errorf("hiercoll: rank %d still has %d rs2d context(s); destroy them before closing its world: %w",
			r.rank.Comm.Rank(), r.contexts, device.ErrInvalidArgument)
	}
	r.closed = true
	delete(table.objects, h)
	streams, allocs := r.streams, r.allocs
	r.streams, r.allocs = map[uint64]streamRef{}, map[device.Ptr]struct{}{}
	table.mu.Unlock()
	if r.process {
		process.handle = 0
	}

	var errs []error
	for _, ref := range streams {
		if ref.owned {
			errs = append(errs, ref.s.Close())
		}
	}
	for p := range allocs {
		errs = append(errs, r.rank.Dev.Free(p))
	}
	errs = append(errs, r.rank.Comm.Close(), r.rank.Dev.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hiercoll: closing rank %d: %w", r.rank.Comm.Rank(), err)
	}
	return nil
}

// dtypes maps the HC_* element types to hiercoll's.
var dtypes = map[int]dtype.DType{1: dtype.BF16, 2: dtype.F16, 3: dtype.F32, 4: dtype.I32, 5: dtype.E4M3}

// The flags of hc_rs2d_create's overlap argument (HC_OVERLAP_WITH_GEMM,
// HC_SPLIT_FIRST_BLOCK, HC_GRAPHS, HC_PULL; main.go checks them against
// hiercoll.h).
const (
	overlapWithGEMM = 1
	splitFirstBlock = 2
	graphs          = 4
	pullEngine      = 8
)

// maxDim bounds M and N so that sizes in bytes stay far from overflowing.
const maxDim = 1 << 40

// createRS2D makes a ReduceScatter2D context on rank h (collective).
func createRS2D(h int64, maxM, n int64, dt int, overlap int, reductionSMs int) (int64, error) {
	syncEnviron() // the multicast gate's variables, the transports' libraries
	d, ok := dtypes[dt]
	ok = ok && d.Valid() // a reduce-scatter's type: not e4m3
	switch {
	case overlap&^(overlapWithGEMM|splitFirstBlock|graphs|pullEngine) != 0:
		return 0, fmt.Errorf("hiercoll: flags %#x: only HC_OVERLAP_WITH_GEMM (1), HC_SPLIT_FIRST_BLOCK (2), HC_GRAPHS (4) and HC_PULL (8) are defined: %w", overlap, device.ErrInvalidArgument)
	case !ok:
		return 0, fmt.Errorf("hiercoll: dtype %d is not HC_BF16 (1), HC_F16 (2), HC_F32 (3) or HC_I32 (4): %w", dt, device.ErrInvalidArgument)
	case maxM <= 0 || maxM > maxDim || n <= 0 || n > maxDim:
		return 0, fmt.Errorf("hiercoll: max_m=%d and n=%d must be positive (and below 2^40): %w", maxM, n, device.ErrInvalidArgument)
	case reductionSMs < 0:
		return 0, fmt.Errorf("hiercoll: reduction_sms=%d must not be negative: %w", reductionSMs, device.ErrInvalidArgument)
	}
	table.mu.Lock()
	r, ok := table.objects[h].(*rankObj)
	if ok {
		r.contexts++ // keeps the world open while New runs
	}
	table.mu.Unlock()
	if !ok {
		return 0, badHandle(h, kindWorld)
	}
	made := false
	defer func() { // also when New panics (the ABI's guard recovers it)
		if !made {
			table.mu.Lock()
			r.contexts--
			table.mu.Unlock()
		}
	}()
	cfg := rs2d.Config{MaxM: int(maxM), N: int(n), DType: d, OverlapWithGEMM: overlap&overlapWithGEMM != 0, Graphs: overlap&graphs != 0}
	if overlap&pullEngine != 0 {
		cfg.Engine = rs2d.EnginePull
	}
	cfg.Tuning.ReductionSMs = reductionSMs
	if overlap&splitFirstBlock != 0 {
		cfg.Tuning.SplitFirstBlock = true
	} else if cfg.OverlapWithGEMM {
		// Signals in segments, for the own GEMM of
		// hc_rs2d_matmul_reduce_scatter (a block producer raises them all).
		cfg.Tuning.Segments = producer.SegmentsFor(cfg.MaxM/r.shape.World(), r.shape.Nodes, r.shape.LocalSize)
	}
	rs, err := newRS2D(context.Background(), r.rank.Comm, r.rank.Dev, cfg)
	if err != nil {
		return 0, err
	}
	obj := &rs2dObj{rs: rs, owner: r, world: r.shape.World(), n: int(n), dt: d}
	if cfg.OverlapWithGEMM {
		if obj.seq, err = newSequential(r, cfg); err != nil {
			return 0, errors.Join(err, rs.Close())
		}
	}
	made = true
	return register(obj), nil
}

// newSequential makes an overlap context's second context, for the small
// products of hc_rs2d_matmul_reduce_scatter (sequentialFor): the overlap
// context cfg's producer.SequentialConfig, which adds its symmetric input
// of max_m x n elements and its pads.
func newSequential(r *rankObj, cfg rs2d.Config) (*rs2d.Context, error) {
	ctx, err := newRS2D(context.Background(), r.rank.Comm, r.rank.Dev, producer.SequentialConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("hiercoll: the small products' context: %w", err)
	}
	return ctx, nil
}

// newRS2D is rs2d.New (a test makes it panic).
var newRS2D = rs2d.New

// destroyRS2D closes context h (collective).
func destroyRS2D(h int64) error {
	table.mu.Lock()
	c, ok := table.objects[h].(*rs2dObj)
	if ok {
		delete(table.objects, h)
	}
	table.mu.Unlock()
	if !ok {
		return badHandle(h, kindRS2D)
	}
	err := c.rs.Close()
	if c.mm != nil {
		err = errors.Join(err, c.mm.Close())
	}
	if c.seq != nil { // after the GEMM stream, which may write into its input
		err = errors.Join(err, c.seq.Close())
	}
	table.mu.Lock()
	c.owner.contexts--
	table.mu.Unlock()
	return err
}

// contextAndStream finds context h and the stream of handle s of its rank,
// under one lock.
func contextAndStream(h int64, s uint64) (*rs2dObj, device.Stream, error) {
	table.mu.Lock()
	c, ok := table.objects[h].(*rs2dObj)
	if !ok {
		table.mu.Unlock()
		return nil, nil, badHandle(h, kindRS2D)
	}
	st, err := c.owner.streamLocked(s)
	table.mu.Unlock()
	return c, st, err
}

// reduceScatter enqueues one call on context h: the hot path.
func reduceScatter(h int64, in uint64, m int64, out uint64, stream uint64) error {
	c, s, err := contextAndStream(h, stream)
	if err != nil {
		return err
	}
	// M's range is checked by ReduceScatter (M <= MaxM), before any size
	// is computed from it.
	inT := rs2d.Tensor{Ptr: device.Ptr(in), Rows: int(m), Cols: c.n, DType: c.dt}
	outT := rs2d.Tensor{Ptr: device.Ptr(out), Rows: int(m) / c.world, Cols: c.n, DType: c.dt}
	return c.rs.ReduceScatter(context.Background(), inT, outT, s)
}

// symmetricInput is hc_rs2d_input: the context's symmetric input; with
// GEMM overlap, its small products' context's (the product buffer that
// context reduce-scatters in place).
func symmetricInput(h int64) (uint64, error) {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return 0, err
	}
	rs := c.rs
	if c.seq != nil {
		rs = c.seq
	}
	t, err := rs.Input(rs.Config().MaxM)
	return uint64(t.Ptr), err
}

// registerInput is hc_rs2d_register (collective): the caller's buffer of
// bytes bytes at p, rows of the context's n columns, registered as this
// rank's input of later calls. A size that is not whole rows still takes
// part, so that the peers fail with it rather than wait.
func registerInput(h int64, p uint64, bytes int64) error {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return err
	}
	rowBytes := int64(c.n) * int64(c.dt.Size())
	rows := bytes / rowBytes
	if bytes <= 0 || bytes%rowBytes != 0 || rows > maxDim {
		rows = 0 // refused by Register, on every rank
	}
	err = c.rs.Register(context.Background(), rs2d.Tensor{Ptr: device.Ptr(p), Rows: int(rows), Cols: c.n, DType: c.dt})
	if err != nil && rows == 0 {
		return fmt.Errorf("hiercoll: register %d bytes at 0x%x: want whole rows of %d bytes (n=%d of %v): %w", bytes, p, rowBytes, c.n, c.dt, err)
	}
	return err
}

// deregisterInput is hc_rs2d_deregister: the registration of the buffer at p.
func deregisterInput(h int64, p uint64) error {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return err
	}
	return c.rs.Deregister(rs2d.Tensor{Ptr: device.Ptr(p), Cols: c.n, DType: c.dt})
}

func signalValue(h int64) (uint32, error) {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return 0, err
	}
	return c.rs.NextSignals().Value, nil
}

func signalAddr(h int64, dest int) (uint64, error) {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return 0, err
	}
	p, err := c.rs.NextSignals().Addr(dest)
	return uint64(p), err
}

func raiseSignal(h int64, dest int, stream uint64) error {
	c, s, err := contextAndStream(h, stream)
	if err != nil {
		return err
	}
	return c.rs.NextSignals().Raise(s, dest)
}

func earlyRows(h int64, m int64) (int64, error) {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return 0, err
	}
	if m <= 0 || m > maxDim {
		return 0, fmt.Errorf("hiercoll: early rows of M=%d: M must be positive: %w", m, device.ErrInvalidArgument)
	}
	return int64(c.rs.NextSignals().EarlyRows(int(m))), nil
}

func earlySignalAddr(h int64, dest int) (uint64, error) {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return 0, err
	}
	p, err := c.rs.NextSignals().EarlyAddr(dest)
	return uint64(p), err
}

func raiseEarly(h int64, dest int, stream uint64) error {
	c, s, err := contextAndStream(h, stream)
	if err != nil {
		return err
	}
	return c.rs.NextSignals().RaiseEarly(s, dest)
}

func clearSignals(h int64, stream uint64) error {
	c, s, err := contextAndStream(h, stream)
	if err != nil {
		return err
	}
	return c.rs.NextSignals().Clear(s)
}

func skipCall(h int64) error {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return err
	}
	c.rs.SkipCall()
	return nil
}

// consumptionOrder writes the order into order, which must hold the world.
func consumptionOrder(h int64, order []int32) error {
	c, err := lookup[*rs2dObj](h, kindRS2D)
	if err != nil {
		return err
	}
	if len(order) < c.world {
		return fmt.Errorf("hiercoll: consumption order of %d ranks does not fit in %d entries: %w", c.world, len(order), device.ErrInvalidArgument)
	}
	for i, r := range c.rs.ConsumptionOrder() {
		order[i] = int32(r)
	}
	return nil
}

// createStream makes a stream on rank h and returns its handle.
func createStream(h int64) (uint64, error) {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return 0, err
	}
	s, err := r.rank.Dev.NewStream(device.Normal)
	if err != nil {
		return 0, err
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	if r.closed {
		return 0, errors.Join(fmt.Errorf("hiercoll: world closed while creating a stream: %w", device.ErrClosed), s.Close())
	}
	id := uint64(s.Handle())
	if r.backend == backendSim {
		r.simSeq++
		id = simStreamTag | r.simSeq
	}
	if old, ok := r.streams[id]; ok && !old.owned {
		r.foreign-- // a foreign wrapper of a CUstream since destroyed, whose address came back
	}
	r.streams[id] = streamRef{s: s, owned: true}
	return id, nil
}

// defaultSyncTimeout bounds hc_stream_synchronize with timeout_ms <= 0.
const defaultSyncTimeout = 60 * time.Second

// rankStream returns rank h and its stream of handle stream.
func rankStream(h int64, stream uint64) (*rankObj, device.Stream, error) {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return nil, nil, err
	}
	table.mu.Lock()
	s, err := r.streamLocked(stream)
	table.mu.Unlock()
	return r, s, err
}

func synchronizeStream(h int64, stream uint64, timeoutMS int64) error {
	_, s, err := rankStream(h, stream)
	if err != nil {
		return err
	}
	timeout := defaultSyncTimeout
	if timeoutMS > 0 {
		timeout = time.Duration(min(timeoutMS, int64(24*time.Hour/time.Millisecond))) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.Synchronize(ctx)
}

func destroyStream(h int64, stream uint64) error {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return err
	}
	table.mu.Lock()
	ref, ok := r.streams[stream]
	if ok {
		delete(r.streams, stream)
		if !ref.owned {
			r.foreign--
		}
	}
	table.mu.Unlock()
	switch {
	case ok && ref.owned:
		return ref.s.Close()
	case ok || (r.backend == backendCUDA && stream != 0):
		return nil // a foreign stream: only the wrapper goes
	}
	return fmt.Errorf("hiercoll: stream 0x%x was not made by hc_stream_create for rank %d: %w", stream, r.rank.Comm.Rank(), device.ErrInvalidArgument)
}

func allocMem(h int64, size int64) (uint64, error) {
	syncEnviron() // HIERCOLL_SIM_MEMORY
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return 0, err
	}
	if size <= 0 {
		return 0, fmt.Errorf("hiercoll: allocation of %d bytes: %w", size, device.ErrInvalidArgument)
	}
	p, err := r.rank.Dev.Alloc(size)
	if err != nil {
		return 0, err
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	if r.closed {
		return 0, errors.Join(fmt.Errorf("hiercoll: world closed while allocating: %w", device.ErrClosed), r.rank.Dev.Free(p))
	}
	r.allocs[p] = struct{}{}
	return uint64(p), nil
}

func freeMem(h int64, p uint64) error {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return err
	}
	table.mu.Lock()
	_, ok := r.allocs[device.Ptr(p)]
	delete(r.allocs, device.Ptr(p))
	table.mu.Unlock()
	if !ok {
		return fmt.Errorf("hiercoll: 0x%x was not allocated by hc_sim_alloc for rank %d (or was freed): %w", p, r.rank.Comm.Rank(), device.ErrInvalidArgument)
	}
	return r.rank.Dev.Free(device.Ptr(p))
}

func copyToDevice(h int64, dst uint64, src []byte) error {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return err
	}
	return r.rank.Dev.CopyToDevice(device.Ptr(dst), src)
}

func copyToHost(h int64, dst []byte, src uint64) error {
	r, err := lookup[*rankObj](h, kindWorld)
	if err != nil {
		return err
	}
	return r.rank.Dev.CopyToHost(dst, device.Ptr(src))
}
