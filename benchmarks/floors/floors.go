// Package floors is hiercoll's lab probe: it measures, on the machine at
// hand, the primitives ReduceScatter2D is built from, so that each size's
// floor is known before a result is called fast or slow: copy-engine
// copies (local, one peer alone, both ways, every rank to its ring
// neighbour, every rank to all peers at once), SM-driven peer writes and
// reads (the reduce kernel pointed at peer memory), the reduce kernel's
// bandwidth against its SM budget, the latency of signals and stream
// operations, SM loads and the copy engine's reads at once, the copy
// engine's reads in chunks with the sums an engine makes beside them
// (pipeline.go), and, optionally, the copy engine beside a GEMM in the
// overlapped path's patterns (beside.go). `hiercoll floors` runs it.
package floors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/benchmarks"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// Options configure the measurements.
type Options struct {
	Bytes int64 // per transfer (default 512 MiB on GPUs, 16 MiB on the CPU)
	Iters int   // timed iterations per measurement (default 10)
	Out   benchmarks.Printer
	Title string
	// BesideGemm adds the copy engine beside a bf16 GEMM on the other
	// stream (world row blocks of Bytes each, N=8192, K=2048): the GEMM
	// alone; the copies to rank+1, +2, ... in turn, on one stream or a
	// stream per peer; world-1 copies to a single peer; GEMM and copies at
	// once; each copy after its block's GEMM (the overlapped path's
	// pattern, joined by events, with nothing else), by the copy engine or
	// by SM stores. Each also with a device barrier first. Needs a device
	// with device.Matmul.
	BesideGemm bool
	// GemmN and GemmK are the GEMM's N and K beside the copies (0: 8192
	// and 2048, a transformer layer's; tests take small ones).
	GemmN, GemmK int
}

// gemmShape is the N and K of the GEMM beside the copies.
func (o Options) gemmShape() (cols, k int) {
	cols, k = besideCols, besideK
	if o.GemmN > 0 {
		cols = o.GemmN
	}
	if o.GemmK > 0 {
		k = o.GemmK
	}
	return cols, k
}

// Job returns the job that runs the measurements on every rank; rank 0
// prints one line each, the slowest rank's.
func Job(o Options) benchmarks.Job {
	return func(ctx context.Context, r world.Rank) error { return run(ctx, r, o) }
}

// lab is one rank's measuring bench: a symmetric heap with one receive
// slot of Bytes per sender and signal words, a source buffer, streams and
// timing events.
type lab struct {
	ctx     context.Context
	r       world.Rank
	o       Options
	p       benchmarks.Printer
	n, me   int
	sms     int
	heap    *symm.Heap
	pad     symm.Pad    // ping/pong and a local word in the first 2n, a device barrier in the last n
	recv    symm.Region // one slot per sender
	src     device.Ptr  // srcBlocks × Bytes of data
	streams []device.Stream
	t0, t1  device.Event
	mapped  bool // every rank's heap is mapped here
	barrier uint32
	// pipeEvents are the pipelined reads' (pipeline.go).
	pipeEvents []device.Event
}

// srcBlocks is how many blocks of Bytes the source buffer holds: what the
// local copy, the reduce kernel and the GEMM beside the copies (one block
// per rank) need.
func srcBlocks(world int) int { return max(4, world) }

// withDefaults fills in the sizes left at 0: on GPUs 512 MiB per transfer;
// on the CPU 16 MiB, or beside a GEMM one GEMM row (16 KiB) and 2
// iterations, as the GEMMs then run in Go (minutes on 8 ranks even so).
func (o Options) withDefaults(gpu bool) (Options, error) {
	if o.Bytes < 0 || o.Iters < 0 || o.GemmN < 0 || o.GemmK < 0 {
		return o, fmt.Errorf("floors: %d bytes per transfer, %d iterations, GEMM N %d, K %d: want positive numbers (0: default): %w",
			o.Bytes, o.Iters, o.GemmN, o.GemmK, device.ErrInvalidArgument)
	}
	slowGemm := o.BesideGemm && !gpu
	switch {
	case o.Bytes > 0:
	case gpu:
		o.Bytes = 512 << 20
	case slowGemm:
		cols, _ := o.gemmShape()
		o.Bytes = 2 * int64(cols)
	default:
		o.Bytes = 16 << 20
	}
	if o.Iters == 0 {
		o.Iters = 10
		if slowGemm {
			o.Iters = 2
		}
	}
	return o, nil
}

func run(ctx context.Context, r world.Rank, o Options) (err error) {
	gpu := r.Dev.Info().Backend == "cuda"
	if o, err = o.withDefaults(gpu); err != nil {
		return err
	}
	l := &lab{ctx: ctx, r: r, o: o, p: benchmarks.Printer{W: o.Out.W, Rank: r.Comm.Rank()},
		n: r.Comm.Size(), me: r.Comm.Rank(), sms: r.Dev.Info().SMs}
	defer func() { err = errors.Join(err, l.close()) }()
	if err := l.open(); err != nil {
		return err
	}
	l.p.Printf("hiercoll floors: %s, %s per transfer, %d iterations, slowest rank\n", o.Title, benchmarks.FormatBytes(o.Bytes), o.Iters)
	if o.BesideGemm && !gpu {
		l.p.Printf("  (CPU backend: the GEMMs beside the copies run in Go, slowly: minutes per measurement)\n")
	}
	steps := []func() error{l.copies, l.peerCopies, l.pipelines}
	if o.BesideGemm && l.n > 1 && l.mapped {
		steps = append(steps, l.besideGemm)
	}
	steps = append(steps, l.reduceKernel, l.signalRoundTrip, l.latencies)
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// open takes the lab's buffers, streams and events and fills the source.
func (l *lab) open() error {
	place, err := symm.PlaceOf(l.r.Comm)
	if err != nil {
		return err
	}
	var layout symm.Layout
	l.pad = layout.AddPad("floors signals", 3*l.n)
	l.recv = layout.Add("floors receive", int64(l.n)*l.o.Bytes)
	if l.heap, err = symm.New(l.ctx, l.r.Comm, l.r.Dev, &layout); err != nil {
		return err
	}
	l.mapped = l.heap.Mapped(place.World())
	size := int64(srcBlocks(l.n)) * l.o.Bytes
	if l.src, err = l.r.Dev.Alloc(size); err != nil {
		return err
	}
	for i := 0; i < max(2*l.n-1, 2); i++ {
		s, err := l.r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		l.streams = append(l.streams, s)
	}
	for _, e := range []*device.Event{&l.t0, &l.t1} {
		if *e, err = l.r.Dev.NewTimedEvent(); err != nil {
			return err
		}
	}
	if err := l.openPipeline(); err != nil {
		return err
	}
	fill := make([]byte, min(16<<20, size))
	for i := range fill {
		fill[i] = byte(i*7 + l.me)
	}
	for off := int64(0); off < size; off += int64(len(fill)) {
		if err := l.r.Dev.CopyToDevice(l.src.Add(off), fill[:min(int64(len(fill)), size-off)]); err != nil {
			return err
		}
	}
	return nil
}

func (l *lab) close() error {
	errs := []error{l.closePipeline()}
	for _, e := range []device.Event{l.t0, l.t1} {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	for _, s := range l.streams {
		errs = append(errs, s.Close())
	}
	if l.src != 0 {
		errs = append(errs, l.r.Dev.Free(l.src))
	}
	if l.heap != nil {
		errs = append(errs, l.r.Comm.Barrier(l.ctx), l.heap.Close())
	}
	return errors.Join(errs...)
}

// slot is the receive slot of sender from in rank's heap.
func (l *lab) slot(rank, from int) device.Ptr {
	return l.heap.At(rank, l.recv).Add(int64(from) * l.o.Bytes)
}

// block is block i of the source.
func (l *lab) block(i int) device.Ptr { return l.src.Add(int64(i) * l.o.Bytes) }

// measure times fn (which enqueues one iteration on the lab's streams, all
// forked from streams[0]) on the ranks where active holds, and reports
// per-rank GB/s of bytes moved per iteration, the slowest rank's time.
func (l *lab) measure(name string, bytes int64, active bool, fn func() error) error {
	if err := l.r.Comm.Barrier(l.ctx); err != nil {
		return err
	}
	var d time.Duration
	if active {
		if _, err := l.timed(1, fn); err != nil { // warm-up
			return err
		}
		total, err := l.timed(l.o.Iters, fn)
		if err != nil {
			return err
		}
		d = total / time.Duration(l.o.Iters)
	}
	all, err := l.r.Comm.AllGather(l.ctx, binary.LittleEndian.AppendUint64(nil, uint64(d)))
	if err != nil {
		return err
	}
	worst := time.Duration(0)
	for _, b := range all {
		worst = max(worst, time.Duration(binary.LittleEndian.Uint64(b)))
	}
	l.p.Printf("  %-58s %10.1f us %8.1f GB/s per rank\n", name, us(worst), float64(bytes)/worst.Seconds()/1e9)
	return nil
}

// timed runs fn iters times between the timing events, every stream forked
// from and joined back into streams[0].
func (l *lab) timed(iters int, fn func() error) (time.Duration, error) {
	s0 := l.streams[0]
	if err := l.t0.Record(s0); err != nil {
		return 0, err
	}
	for _, s := range l.streams[1:] {
		if err := s.WaitEvent(l.t0); err != nil {
			return 0, err
		}
	}
	for i := 0; i < iters; i++ {
		if err := fn(); err != nil {
			return 0, err
		}
	}
	for _, s := range l.streams[1:] {
		if err := l.t1.Record(s); err != nil {
			return 0, err
		}
		if err := s0.WaitEvent(l.t1); err != nil {
			return 0, err
		}
	}
	if err := l.t1.Record(s0); err != nil {
		return 0, err
	}
	if err := s0.Synchronize(l.ctx); err != nil {
		return 0, err
	}
	return l.t1.Since(l.t0)
}

// smCopy enqueues dst = from (nbytes) with the reduce kernel on grid blocks.
func (l *lab) smCopy(s device.Stream, grid int, dst, from device.Ptr, nbytes int64) error {
	return kernels.LaunchReduce(l.r.Dev, s, dtype.F32, grid, dst, kernels.Blocks{Src: from, Stride: nbytes / 4, N: 1, Count: nbytes / 4, Self: -1})
}

// smBudgets are the SM budgets the SM copies and the reduce kernel are
// measured with.
func (l *lab) smBudgets(from ...int) []int { return append(from, l.sms) }

// copies measures local copies: the copy engine's and SM copies'.
func (l *lab) copies() error {
	s0, bytes := l.streams[0], l.o.Bytes
	if err := l.measure("CE local copy (read+write counted once)", bytes, true, func() error {
		return l.r.Dev.Copy(s0, l.block(1), l.src, bytes)
	}); err != nil {
		return err
	}
	for _, g := range l.smBudgets(16, 32, 64) {
		if err := l.measure(fmt.Sprintf("SM local copy, %d SMs", g), bytes, true, func() error {
			return l.smCopy(s0, 2*g, l.block(1), l.src, bytes)
		}); err != nil {
			return err
		}
	}
	return nil
}

// peerCopies measures copies to peers: the copy engine's in the node
// stage's patterns, and SM stores and loads on the ring.
func (l *lab) peerCopies() error {
	n, me, s0, bytes := l.n, l.me, l.streams[0], l.o.Bytes
	if n < 2 || !l.mapped {
		return nil
	}
	type copyCase struct {
		name   string
		active bool
		fn     func() error
	}
	cases := []copyCase{
		{"CE peer copy, rank 0 -> 1 alone", me == 0, func() error { return l.r.Dev.Copy(s0, l.slot(1, 0), l.src, bytes) }},
		{"CE peer copy, ranks 0 <-> 1 both ways", me < 2, func() error { return l.r.Dev.Copy(s0, l.slot(1-me, me), l.src, bytes) }},
		{"CE peer copy, every rank to rank+1 (ring)", true, func() error { return l.r.Dev.Copy(s0, l.slot((me+1)%n, me), l.src, bytes) }},
		// The same moves issued by the receiving rank: its copy engine reads the peer's memory.
		{"CE peer read (pull), rank 0 <- 1 alone", me == 0, func() error { return l.r.Dev.Copy(s0, l.block(1), l.slot(1, 1), bytes) }},
		{"CE peer read (pull), ranks 0 <-> 1 both ways", me < 2, func() error { return l.r.Dev.Copy(s0, l.block(1), l.slot(1-me, 1-me), bytes) }},
		{"CE peer read (pull) from rank+1 (ring)", true, func() error { return l.r.Dev.Copy(s0, l.block(1), l.slot((me+1)%n, (me+1)%n), bytes) }},
	}
	if n > 2 {
		toAll := func(stream func(i int) device.Stream) func() error {
			return func() error {
				part := bytes / int64(n-1)
				for i := 1; i < n; i++ {
					if err := l.r.Dev.Copy(stream(i), l.slot((me+i)%n, me), l.src.Add(int64(i-1)*part), part); err != nil {
						return err
					}
				}
				return nil
			}
		}
		fromAll := func(stream func(i int) device.Stream) func() error {
			return func() error {
				part := bytes / int64(n-1)
				for i := 1; i < n; i++ {
					q := (me + i) % n
					if err := l.r.Dev.Copy(stream(i), l.block(1).Add(int64(i-1)*part), l.slot(q, q).Add(int64(i-1)*part), part); err != nil {
						return err
					}
				}
				return nil
			}
		}
		cases = append(cases,
			copyCase{fmt.Sprintf("CE peer copies, every rank to all %d peers, 1 stream", n-1), true, toAll(func(int) device.Stream { return s0 })},
			copyCase{fmt.Sprintf("CE peer copies, every rank to all %d peers, %d streams", n-1, n-1), true, toAll(func(i int) device.Stream { return l.streams[i] })},
			copyCase{fmt.Sprintf("CE peer reads (pull), every rank from all %d peers, 1 stream", n-1), true, fromAll(func(int) device.Stream { return s0 })},
			copyCase{fmt.Sprintf("CE peer reads (pull), every rank from all %d peers, %d streams", n-1, n-1), true, fromAll(func(i int) device.Stream { return l.streams[i] })})
	}
	// What a pull engine on the copy engine adds: its landing slots in the
	// symmetric heap, and its sums beside the copies (on 2 GPUs the engine
	// path of rs2d's default from 512 MiB).
	cases = append(cases, copyCase{fmt.Sprintf("CE peer reads (pull) from every peer into the heap, %d stream(s)", n-1), true, l.readsIntoHeap})
	// The sum of what landed, on a budget of SMs: alone, and beside the
	// reads (whether the reads slow down while it runs; every row's GB/s
	// are of the reads' bytes: compare the times).
	sum := func(sms int) error {
		part := l.part()
		return kernels.LaunchReduce(l.r.Dev, s0, dtype.BF16, 2*sms, l.block(3),
			kernels.Blocks{Src: l.src, Stride: part / 2, N: n, Count: part / 2, Self: -1})
	}
	for _, g := range []int{8, 16, 32} {
		cases = append(cases,
			copyCase{fmt.Sprintf("  the reduce kernel alone (%d SMs, local blocks of a part)", g), true, func() error { return sum(g) }},
			copyCase{fmt.Sprintf("  the reads, the reduce kernel beside (%d SMs, local blocks)", g), true, func() error {
				if err := l.readsIntoHeap(); err != nil {
					return err
				}
				return sum(g)
			}})
	}
	for _, g := range l.smBudgets(16, 32, 64) {
		cases = append(cases, copyCase{fmt.Sprintf("SM peer write (push) to rank+1, %d SMs, ring", g), true, func() error {
			return l.smCopy(s0, 2*g, l.slot((me+1)%n, me), l.src, bytes)
		}})
	}
	for _, g := range l.smBudgets(16, 32, 64) {
		cases = append(cases, copyCase{fmt.Sprintf("SM peer read (pull) from rank+1, %d SMs, ring", g), true, func() error {
			return l.smCopy(s0, 2*g, l.block(1), l.slot((me+1)%n, (me+1)%n), bytes)
		}})
	}
	for _, c := range cases {
		if err := l.measure(c.name, bytes, c.active, c.fn); err != nil {
			return err
		}
	}
	// SM stores and SM loads with every peer at once (what a pushing or a
	// pulling engine on n > 2 GPUs moves): the SM budget shared among the
	// peers, a stream per peer, an equal part of Bytes each (the loads are
	// mixedReads' with no share for the copy engine).
	if n > 2 {
		part := l.part()
		for _, g := range l.smBudgets(32, 64) {
			grid := max(1, 2*g/(n-1))
			push := func() error {
				for i := 1; i < n; i++ {
					at := int64(i-1) * part
					if err := l.smCopy(l.streams[i], grid, l.slot((me+i)%n, me).Add(at), l.src.Add(at), part); err != nil {
						return err
					}
				}
				return nil
			}
			if err := l.measure(fmt.Sprintf("SM peer writes (push) to all %d peers, %d SMs", n-1, g), int64(n-1)*part, true, push); err != nil {
				return err
			}
			if err := l.measure(fmt.Sprintf("SM peer reads (pull) from all %d peers, %d SMs", n-1, g), int64(n-1)*part, true, l.mixedReads(g, 100, part, 0)); err != nil {
				return err
			}
		}
	}
	// SM loads and the copy engine's reads at once: whether together they
	// take more from the peers than either alone; with a sum of the copy
	// engine's share started beside them, unordered (pipeline.go has the
	// sums ordered after the copies, as an engine needs them).
	part := l.part()
	type mix struct{ pct, sumSMs int }
	for _, m := range []mix{{100, 0}, {67, 0}, {50, 0}, {33, 0}, {67, 8}, {67, 16}, {50, 8}, {50, 16}} {
		name := fmt.Sprintf("SM reads %d%% (32 SMs), CE reads the rest, from all %d peers", m.pct, n-1)
		if m.sumSMs > 0 {
			name = fmt.Sprintf("  the same, %d%%, and a sum of the CE's share (%d SMs)", m.pct, m.sumSMs)
		}
		if err := l.measure(name, int64(n-1)*part, true, l.mixedReads(32, m.pct, part, m.sumSMs)); err != nil {
			return err
		}
	}
	return nil
}

// part is the bytes each rank reads from each peer where every peer gives
// it an equal part of Bytes: 4 KiB multiples, so that the reduce kernel
// over such parts takes its vector path.
func (l *lab) part() int64 { return l.o.Bytes / int64(l.n-1) &^ 4095 }

// mixedReads has every rank read part bytes from each peer's heap: pct
// percent of it by SM loads (sms SMs shared among the peers), the rest by
// the copy engine, each peer's two shares on streams of their own; with
// sumSMs > 0 a reduce kernel on that many SMs beside reads and writes what
// summing the copy engine's share with the own rows would (local blocks).
func (l *lab) mixedReads(sms, pct int, part int64, sumSMs int) func() error {
	n, me := l.n, l.me
	smPart := part * int64(pct) / 100 &^ 4095
	return func() error {
		for i := 1; i < n; i++ {
			q := (me + i) % n
			from := l.slot(q, q).Add(int64(i-1) * part)
			to := l.block(1).Add(int64(i-1) * part)
			if smPart > 0 {
				if err := l.smCopy(l.streams[i], max(1, 2*sms/(n-1)), to, from, smPart); err != nil {
					return err
				}
			}
			if smPart < part {
				if err := l.r.Dev.Copy(l.streams[n-1+i], to.Add(smPart), from.Add(smPart), part-smPart); err != nil {
					return err
				}
			}
		}
		if sumSMs == 0 || smPart == part {
			return nil
		}
		count := (part - smPart) / 2
		return kernels.LaunchReduce(l.r.Dev, l.streams[0], dtype.BF16, 2*sumSMs, l.block(3),
			kernels.Blocks{Src: l.src, Stride: count, N: n, Count: count, Self: -1})
	}
}

// readsIntoHeap has every rank's copy engine read a part of Bytes from each
// peer's heap into its own heap's receive slots, one stream per peer.
func (l *lab) readsIntoHeap() error {
	n, me := l.n, l.me
	part := l.o.Bytes / int64(n-1)
	for i := 1; i < n; i++ {
		q := (me + i) % n
		if err := l.r.Dev.Copy(l.streams[i], l.slot(me, q), l.slot(q, q).Add(int64(i-1)*part), part); err != nil {
			return err
		}
	}
	return nil
}

// reduceKernel measures the reduce kernel over n blocks (as in a 1×n node
// step), by SM budget: it reads n blocks of Bytes/n and writes one.
func (l *lab) reduceKernel() error {
	k := max(l.n, 2)
	blk := l.o.Bytes / int64(k) / 2 * 2
	for _, g := range l.smBudgets(8, 16, 32, 64) {
		if err := l.measure(fmt.Sprintf("reduce kernel, %d blocks of %s, %d SMs (bytes read+written)", k, benchmarks.FormatBytes(blk), g),
			int64(k+1)*blk, true, func() error {
				return kernels.LaunchReduce(l.r.Dev, l.streams[0], dtype.BF16, 2*g, l.block(3),
					kernels.Blocks{Src: l.src, Stride: blk / 2, N: k, Count: blk / 2, Self: -1})
			}); err != nil {
			return err
		}
	}
	return nil
}

// signalRoundTrip measures a signal round trip between ranks 0 and 1
// (write-value to the peer, wait for its answer), host-timed.
func (l *lab) signalRoundTrip() error {
	me, s0 := l.me, l.streams[0]
	if l.n < 2 || !l.mapped || me >= 2 {
		return nil
	}
	const rounds = 200
	peer := 1 - me
	start := time.Now()
	for i := uint32(1); i <= rounds; i++ {
		var err error
		if me == 0 {
			err = errors.Join(l.r.Dev.WriteValue32(s0, l.heap.Word(peer, l.pad, 0), i),
				l.r.Dev.WaitValue32(s0, device.Word{Addr: l.heap.Word(me, l.pad, 1), Label: "pong"}, device.GEQ, i))
		} else {
			err = errors.Join(l.r.Dev.WaitValue32(s0, device.Word{Addr: l.heap.Word(me, l.pad, 0), Label: "ping"}, device.GEQ, i),
				l.r.Dev.WriteValue32(s0, l.heap.Word(peer, l.pad, 1), i))
		}
		if err != nil {
			return err
		}
	}
	if err := s0.Synchronize(l.ctx); err != nil {
		return err
	}
	if me == 0 {
		l.p.Printf("  %-58s %10.2f us (host-timed, %d rounds)\n", "signal round trip 0 -> 1 -> 0 (write-value + wait-value)",
			float64(time.Since(start).Microseconds())/rounds, rounds)
	}
	return nil
}

// latencies measures small steps back to back on one stream, device-timed:
// an event join, a write-value, a small copy and a small reduce.
func (l *lab) latencies() error {
	s0, me, n := l.streams[0], l.me, l.n
	// The steps move 64 KiB, or less where the buffers are smaller (the
	// 4 reduce blocks read the first half of the source's first block).
	small := min(int64(64<<10), l.o.Bytes/2) &^ 15
	steps := []struct {
		name string
		fn   func() error
	}{
		{"event join s1 -> s0 (record + wait)", func() error {
			if err := l.t1.Record(l.streams[1]); err != nil {
				return err
			}
			return s0.WaitEvent(l.t1)
		}},
		{"local write-value", func() error { return l.r.Dev.WriteValue32(s0, l.heap.Word(me, l.pad, 2*n-1), 1) }},
		{fmt.Sprintf("CE copy of %s (local)", benchmarks.FormatBytes(small)), func() error { return l.r.Dev.Copy(s0, l.block(1), l.src, small) }},
		{fmt.Sprintf("reduce kernel, 4 blocks of %s, 32 SMs", benchmarks.FormatBytes(small)), func() error {
			return kernels.LaunchReduce(l.r.Dev, s0, dtype.BF16, 64, l.block(3), kernels.Blocks{Src: l.src, Stride: small / 2, N: 4, Count: small / 2, Self: -1})
		}},
	}
	const reps = 200
	for _, st := range steps {
		d, err := l.timed(reps, st.fn)
		if err != nil {
			return err
		}
		l.p.Printf("  %-58s %10.2f us each (device-timed, %d back to back)\n", st.name, us(d)/reps, reps)
	}
	return nil
}

// align makes streams[0] wait until every rank's streams[0] got there: a
// device barrier, so that the ranks' copies start together.
func (l *lab) align() error {
	l.barrier++
	s0 := l.streams[0]
	for q := 0; q < l.n; q++ {
		if err := l.r.Dev.WriteValue32(s0, l.heap.Word(q, l.pad, 2*l.n+l.me), l.barrier); err != nil {
			return err
		}
	}
	for q := 0; q < l.n; q++ {
		w := device.Word{Addr: l.heap.Word(l.me, l.pad, 2*l.n+q), Label: fmt.Sprintf("floors barrier word of rank %d", q)}
		if err := l.r.Dev.WaitValue32(s0, w, device.GEQ, l.barrier); err != nil {
			return err
		}
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
