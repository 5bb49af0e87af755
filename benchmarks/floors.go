package benchmarks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
	"github.com/seed12530e24/hiercoll/world"
)

// FloorsOptions configure the primitive measurements.
type FloorsOptions struct {
	Bytes int64 // per transfer (default 512 MiB)
	Iters int
	Out   Printer
	Title string
	// BesideGemm adds the copy engine beside a bf16 GEMM on the other
	// stream (world row blocks of Bytes each, N=8192, K=2048): the GEMM
	// alone; the copies to rank+1, +2, ... in turn, on one stream or a
	// stream per peer; world-1 copies to a single peer; GEMM and copies at
	// once; each copy after its block's GEMM (the overlapped path's
	// pattern, joined by events, with nothing else). Each also with a
	// device barrier first. Needs a device with device.Matmul.
	BesideGemm bool
}

// Floors returns a job that measures the primitives ReduceScatter2D is built
// from on this machine, so that each size's floor is known: copy-engine
// copies (local, one peer alone, every rank to its ring neighbour, every rank
// to all peers at once on separate streams), SM-driven peer writes and reads
// (the reduce kernel with one block, pointed at peer memory), the reduce
// kernel's bandwidth against its SM budget, and the latency of a signal
// round trip between two ranks.
func Floors(o FloorsOptions) Job {
	return func(ctx context.Context, r world.Rank) error { return floors(ctx, r, o) }
}

func floors(ctx context.Context, r world.Rank, o FloorsOptions) (err error) {
	if o.Bytes == 0 {
		o.Bytes = 512 << 20
	}
	if o.Iters == 0 {
		o.Iters = 10
	}
	p := Printer{W: o.Out.W, Rank: r.Comm.Rank()}
	place, err := symm.PlaceOf(r.Comm)
	if err != nil {
		return err
	}
	n, me := r.Comm.Size(), r.Comm.Rank()
	sms := r.Dev.Info().SMs
	var l symm.Layout
	pad := l.AddPad("floors signals", 3*n)            // ping/pong and a local word in the first 2n, a device barrier in the last n
	recv := l.Add("floors receive", int64(n)*o.Bytes) // one slot per sender
	heap, err := symm.New(ctx, r.Comm, r.Dev, &l)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Comm.Barrier(ctx), heap.Close()) }()
	src, err := r.Dev.Alloc(4 * o.Bytes)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Dev.Free(src)) }()
	var streams []device.Stream
	for i := 0; i < max(n, 2); i++ {
		s, err := r.Dev.NewStream(device.Normal)
		if err != nil {
			return err
		}
		streams = append(streams, s)
		defer func() { err = errors.Join(err, s.Close()) }()
	}
	var t0, t1 device.Event
	for _, e := range []*device.Event{&t0, &t1} {
		if *e, err = r.Dev.NewEvent(); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, (*e).Close()) }()
	}
	fill := make([]byte, 16<<20)
	for i := range fill {
		fill[i] = byte(i*7 + me)
	}
	for off := int64(0); off < 4*o.Bytes; off += int64(len(fill)) {
		if err := r.Dev.CopyToDevice(src.Add(off), fill[:min(int64(len(fill)), 4*o.Bytes-off)]); err != nil {
			return err
		}
	}
	slot := func(rank, from int) device.Ptr { return heap.At(rank, recv).Add(int64(from) * o.Bytes) }
	mapped := heap.Mapped(place.World())

	// measure times fn (which enqueues one iteration on the given streams,
	// all forked from streams[0]) and reports per-rank GB/s of bytes moved
	// per iteration, the slowest rank's time.
	measure := func(name string, bytes int64, active bool, fn func() error) error {
		if err := r.Comm.Barrier(ctx); err != nil {
			return err
		}
		var d time.Duration
		if active {
			run := func(iters int) (time.Duration, error) {
				if err := t0.Record(streams[0]); err != nil {
					return 0, err
				}
				for _, s := range streams[1:] {
					if err := s.WaitEvent(t0); err != nil {
						return 0, err
					}
				}
				for i := 0; i < iters; i++ {
					if err := fn(); err != nil {
						return 0, err
					}
				}
				for _, s := range streams[1:] {
					if err := t1.Record(s); err != nil {
						return 0, err
					}
					if err := streams[0].WaitEvent(t1); err != nil {
						return 0, err
					}
				}
				if err := t1.Record(streams[0]); err != nil {
					return 0, err
				}
				if err := streams[0].Synchronize(ctx); err != nil {
					return 0, err
				}
				return t1.Since(t0)
			}
			if _, err := run(1); err != nil { // warm-up
				return err
			}
			total, err := run(o.Iters)
			if err != nil {
				return err
			}
			d = total / time.Duration(o.Iters)
		}
		all, err := r.Comm.AllGather(ctx, binary.LittleEndian.AppendUint64(nil, uint64(d)))
		if err != nil {
			return err
		}
		worst := time.Duration(0)
		for _, b := range all {
			worst = max(worst, time.Duration(binary.LittleEndian.Uint64(b)))
		}
		p.Printf("  %-58s %10.1f us %8.1f GB/s per rank\n", name, us(worst), float64(bytes)/worst.Seconds()/1e9)
		return nil
	}
	// smCopy enqueues dst = src (n bytes) with the reduce kernel on grid blocks.
	smCopy := func(s device.Stream, grid int, dst, from device.Ptr, nbytes int64) error {
		return kernels.LaunchReduce(r.Dev, s, dtype.F32, grid, dst, kernels.Blocks{Src: from, Stride: nbytes / 4, N: 1, Count: nbytes / 4, Self: -1})
	}

	p.Printf("hiercoll floors: %s, %s per transfer, %d iterations, slowest rank\n", o.Title, mib(o.Bytes), o.Iters)
	s0 := streams[0]
	if err := measure("CE local copy (read+write counted once)", o.Bytes, true, func() error {
		return r.Dev.Copy(s0, src.Add(o.Bytes), src, o.Bytes)
	}); err != nil {
		return err
	}
	for _, g := range []int{16, 32, 64, sms} {
		g := g
		if err := measure(fmt.Sprintf("SM local copy, %d SMs", g), o.Bytes, true, func() error {
			return smCopy(s0, 2*g, src.Add(o.Bytes), src, o.Bytes)
		}); err != nil {
			return err
		}
	}
	if n >= 2 && mapped {
		if err := measure("CE peer copy, rank 0 -> 1 alone", o.Bytes, me == 0, func() error {
			return r.Dev.Copy(s0, slot(1, 0), src, o.Bytes)
		}); err != nil {
			return err
		}
		if err := measure("CE peer copy, ranks 0 <-> 1 both ways", o.Bytes, me < 2, func() error {
			return r.Dev.Copy(s0, slot(1-me, me), src, o.Bytes)
		}); err != nil {
			return err
		}
		if err := measure("CE peer copy, every rank to rank+1 (ring)", o.Bytes, true, func() error {
			return r.Dev.Copy(s0, slot((me+1)%n, me), src, o.Bytes)
		}); err != nil {
			return err
		}
		if n > 2 {
			if err := measure(fmt.Sprintf("CE peer copies, every rank to all %d peers, 1 stream", n-1), o.Bytes, true, func() error {
				for i := 1; i < n; i++ {
					if err := r.Dev.Copy(s0, slot((me+i)%n, me), src.Add(int64(i-1)*o.Bytes/int64(n-1)), o.Bytes/int64(n-1)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if err := measure(fmt.Sprintf("CE peer copies, every rank to all %d peers, %d streams", n-1, n-1), o.Bytes, true, func() error {
				for i := 1; i < n; i++ {
					if err := r.Dev.Copy(streams[i], slot((me+i)%n, me), src.Add(int64(i-1)*o.Bytes/int64(n-1)), o.Bytes/int64(n-1)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
		for _, g := range []int{16, 32, 64, sms} {
			g := g
			if err := measure(fmt.Sprintf("SM peer write (push) to rank+1, %d SMs, ring", g), o.Bytes, true, func() error {
				return smCopy(s0, 2*g, slot((me+1)%n, me), src, o.Bytes)
			}); err != nil {
				return err
			}
		}
		for _, g := range []int{16, 32, 64, sms} {
			g := g
			if err := measure(fmt.Sprintf("SM peer read (pull) from rank+1, %d SMs, ring", g), o.Bytes, true, func() error {
				return smCopy(s0, 2*g, src.Add(o.Bytes), slot((me+1)%n, (me+1)%n), o.Bytes)
			}); err != nil {
				return err
			}
		}
	}
	if o.BesideGemm && n > 1 && mapped {
		// align makes s0 wait until every rank's s0 got there: a device
		// barrier, so that the ranks' copies start together.
		epoch := uint32(0)
		align := func() error {
			epoch++
			for q := 0; q < n; q++ {
				if err := r.Dev.WriteValue32(s0, heap.Word(q, pad, 2*n+me), epoch); err != nil {
					return err
				}
			}
			for q := 0; q < n; q++ {
				w := device.Word{Addr: heap.Word(me, pad, 2*n+q), Label: fmt.Sprintf("floors barrier word of rank %d", q)}
				if err := r.Dev.WaitValue32(s0, w, device.GEQ, epoch); err != nil {
					return err
				}
			}
			return nil
		}
		if err := besideGemm(r, o, measure, align, smCopy, src, slot, streams); err != nil {
			return err
		}
	}
	// The reduce kernel over n blocks (as in a 1×n node step), by SM budget:
	// reads n blocks of Bytes/n and writes one.
	blk := o.Bytes / int64(max(n, 2)) / 2 * 2
	for _, g := range []int{8, 16, 32, 64, sms} {
		g := g
		if err := measure(fmt.Sprintf("reduce kernel, %d blocks of %s, %d SMs (bytes read+written)", max(n, 2), mib(blk), g),
			int64(max(n, 2)+1)*blk, true, func() error {
				return kernels.LaunchReduce(r.Dev, s0, dtype.BF16, 2*g, src.Add(3*o.Bytes),
					kernels.Blocks{Src: src, Stride: blk / 2, N: max(n, 2), Count: blk / 2, Self: -1})
			}); err != nil {
			return err
		}
	}
	// Signal round trip between ranks 0 and 1 (write-value to the peer, wait
	// for its answer), and an event join between two streams.
	if n >= 2 && mapped && me < 2 {
		const rounds = 200
		peer := 1 - me
		start := time.Now()
		for i := uint32(1); i <= rounds; i++ {
			if me == 0 {
				if err := r.Dev.WriteValue32(s0, heap.Word(peer, pad, 0), i); err != nil {
					return err
				}
				if err := r.Dev.WaitValue32(s0, device.Word{Addr: heap.Word(me, pad, 1), Label: "pong"}, device.GEQ, i); err != nil {
					return err
				}
			} else {
				if err := r.Dev.WaitValue32(s0, device.Word{Addr: heap.Word(me, pad, 0), Label: "ping"}, device.GEQ, i); err != nil {
					return err
				}
				if err := r.Dev.WriteValue32(s0, heap.Word(peer, pad, 1), i); err != nil {
					return err
				}
			}
		}
		if err := t1.Record(s0); err != nil {
			return err
		}
		if err := s0.Synchronize(ctx); err != nil {
			return err
		}
		if me == 0 {
			p.Printf("  %-58s %10.2f us (host-timed, %d rounds)\n", "signal round trip 0 -> 1 -> 0 (write-value + wait-value)",
				float64(time.Since(start).Microseconds())/rounds, rounds)
		}
	}
	lat := func(name string, fn func() error) error {
		const reps = 200
		if err := t0.Record(s0); err != nil {
			return err
		}
		for i := 0; i < reps; i++ {
			if err := fn(); err != nil {
				return err
			}
		}
		if err := t1.Record(s0); err != nil {
			return err
		}
		if err := s0.Synchronize(ctx); err != nil {
			return err
		}
		d, err := t1.Since(t0)
		if err != nil {
			return err
		}
		p.Printf("  %-58s %10.2f us each (device-timed, %d back to back)\n", name, us(d)/reps, reps)
		return nil
	}
	// The latency steps move 64 KiB, or less where the buffers are smaller
	// (src holds 4 × Bytes: the 4 reduce blocks read its first half).
	small := min(int64(64<<10), o.Bytes/2) &^ 15
	steps := []struct {
		name string
		fn   func() error
	}{
		{"event join s1 -> s0 (record + wait)", func() error {
			if err := t1.Record(streams[1]); err != nil {
				return err
			}
			return s0.WaitEvent(t1)
		}},
		{"local write-value", func() error { return r.Dev.WriteValue32(s0, heap.Word(me, pad, 2*n-1), 1) }},
		{fmt.Sprintf("CE copy of %s (local)", mib(small)), func() error { return r.Dev.Copy(s0, src.Add(o.Bytes), src, small) }},
		{fmt.Sprintf("reduce kernel, 4 blocks of %s, 32 SMs", mib(small)), func() error {
			return kernels.LaunchReduce(r.Dev, s0, dtype.BF16, 64, src.Add(3*o.Bytes), kernels.Blocks{Src: src, Stride: small / 2, N: 4, Count: small / 2, Self: -1})
		}},
	}
	for _, st := range steps {
		if err := lat(st.name, st.fn); err != nil {
			return err
		}
	}
	return nil
}

// besideGemm measures the copy engine beside a GEMM (FloorsOptions.BesideGemm):
// C [n·rows, 8192] = A [n·rows, 2048] · B [2048, 8192] in n row blocks of
// Bytes each on streams[1], C being src; the copies move block (me+i) to
// rank me+i on streams[0]. Each measurement runs twice: as is, and with
// every iteration starting at a device barrier (align, on streams[0], which
// the GEMM's stream then waits for), so that the ranks move in step.
func besideGemm(r world.Rank, o FloorsOptions, measure func(string, int64, bool, func() error) error, align func() error,
	smCopy func(s device.Stream, grid int, dst, from device.Ptr, nbytes int64) error,
	src device.Ptr, slot func(rank, from int) device.Ptr, streams []device.Stream) (err error) {
	const cols, k = 8192, 2048
	n, me := r.Comm.Size(), r.Comm.Rank()
	if o.Bytes%(2*cols) != 0 {
		return fmt.Errorf("floors: beside a GEMM, bytes per transfer must be a multiple of %d", 2*cols)
	}
	rows := int(o.Bytes / (2 * cols))
	mm, err := device.MatmulOf(r.Dev)
	if err != nil {
		return err
	}
	a, err := r.Dev.Alloc(int64(n*rows*k) * 2)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Dev.Free(a)) }()
	b, err := r.Dev.Alloc(int64(k*cols) * 2)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.Dev.Free(b)) }()
	for _, buf := range []struct {
		p     device.Ptr
		elems int
	}{{a, n * rows * k}, {b, k * cols}} {
		if err := r.Dev.Memset32(streams[1], buf.p, 0x3c003c00, int64(buf.elems/2)); err != nil { // bf16 pairs of 0.0078
			return err
		}
	}
	blockDone := make([]device.Event, n)
	var barrierPassed device.Event // recorded on streams[0] after align, for the GEMM's stream
	toMake := []*device.Event{&barrierPassed}
	for i := range blockDone {
		toMake = append(toMake, &blockDone[i])
	}
	for _, e := range toMake {
		if *e, err = r.Dev.NewEvent(); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, (*e).Close()) }()
	}
	// block is the GEMM of rank (me+i+1)%n's rows, the own one last, on
	// sms SMs (0: all).
	block := func(i, sms int) device.GemmSpec {
		d := (me + i + 1) % n
		return device.GemmSpec{M: rows, N: cols, K: k, DType: dtype.BF16,
			A: a.Add(int64(d*rows*k) * 2), B: b, C: src.Add(int64(d) * o.Bytes), SMs: sms}
	}
	// copyOn enqueues on st the copy of block i (for rank me+i+1) to its rank.
	copyOn := func(st device.Stream, i int) error {
		d := (me + i + 1) % n
		return r.Dev.Copy(st, slot(d, me), src.Add(int64(d)*o.Bytes), o.Bytes)
	}
	// repeatTo enqueues on streams[0] n-1 copies of a block's size to rank
	// me+step, from the first n-1 blocks.
	repeatTo := func(step int) error {
		for i := 0; i < n-1; i++ {
			if err := r.Dev.Copy(streams[0], slot((me+step)%n, me), src.Add(int64(i)*o.Bytes), o.Bytes); err != nil {
				return err
			}
		}
		return nil
	}
	gemm := func(events bool, sms int) error {
		for i := 0; i < n; i++ {
			if err := mm.Gemm(streams[1], block(i, sms)); err != nil {
				return err
			}
			if events {
				if err := blockDone[i].Record(streams[1]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	copies := func() error {
		for i := 0; i < n-1; i++ {
			if err := copyOn(streams[0], i); err != nil {
				return err
			}
		}
		return nil
	}
	// afterBlocks: each block's GEMM on sms SMs (0: all), then on streams[0]
	// push(i) of block i to its rank after the block's event.
	afterBlocks := func(sms int, push func(i int) error) error {
		if err := gemm(true, sms); err != nil {
			return err
		}
		for i := 0; i < n-1; i++ {
			if err := streams[0].WaitEvent(blockDone[i]); err != nil {
				return err
			}
			if err := push(i); err != nil {
				return err
			}
		}
		return nil
	}
	// smPushes is afterBlocks with SM stores on g SMs, the GEMM targeting the
	// other SMs.
	smPushes := func(g int) func() error {
		return func() error {
			return afterBlocks(max(1, r.Dev.Info().SMs-g), func(i int) error {
				d := (me + i + 1) % n
				return smCopy(streams[0], 2*g, slot(d, me), src.Add(int64(d)*o.Bytes), o.Bytes)
			})
		}
	}
	moved := int64(n-1) * o.Bytes
	label := fmt.Sprintf("%d blocks of %dx%dx%d bf16", n, rows, cols, k)
	type measurement struct {
		name  string
		bytes int64
		fn    func() error
	}
	ms := []measurement{
		{"GEMM alone, " + label, moved, func() error { return gemm(false, 0) }},
		{fmt.Sprintf("CE copies to rank+1..+%d in turn, alone", n-1), moved, copies},
		{fmt.Sprintf("CE copies to rank+1..+%d in turn, a stream per peer, chained by events", n-1), moved, func() error {
			for i := 0; i < n-1; i++ {
				st := streams[1+i%(len(streams)-1)]
				// After the previous copy (for the first: the previous
				// iteration's last; an event never recorded is no wait).
				if err := st.WaitEvent(blockDone[(i+n-2)%(n-1)]); err != nil {
					return err
				}
				if err := copyOn(st, i); err != nil {
					return err
				}
				if err := blockDone[i].Record(st); err != nil {
					return err
				}
			}
			return nil
		}},
		{fmt.Sprintf("CE copies to rank+1, %d times in turn, alone", n-1), moved, func() error { return repeatTo(1) }},
	}
	if n > 2 { // on 2 GPUs rank+2 is the rank itself
		ms = append(ms, measurement{fmt.Sprintf("CE copies to rank+2, %d times in turn, alone", n-1), moved, func() error { return repeatTo(2) }})
	}
	ms = append(ms, []measurement{
		{fmt.Sprintf("CE copies to rank+%d, %d times in turn, alone", n-1, n-1), moved, func() error { return repeatTo(n - 1) }},
		{"GEMM and those copies at once (GB/s: copies)", moved, func() error { return errors.Join(gemm(false, 0), copies()) }},
		{fmt.Sprintf("GEMM and %d copies to rank+1 at once", n-1), moved, func() error { return errors.Join(gemm(false, 0), repeatTo(1)) }},
		{"each copy after its block's GEMM (events)", moved, func() error {
			return afterBlocks(0, func(i int) error { return copyOn(streams[0], i) })
		}},
		{"the same, pushed by SM stores on 16 SMs, the GEMM on the rest", moved, smPushes(16)},
		{"the same, pushed by SM stores on 32 SMs, the GEMM on the rest", moved, smPushes(32)},
	}...)
	for _, m := range ms {
		if err := measure(m.name, m.bytes, true, m.fn); err != nil {
			return err
		}
		aligned := func() error {
			if err := align(); err != nil {
				return err
			}
			if err := barrierPassed.Record(streams[0]); err != nil { // the GEMM starts after the barrier too
				return err
			}
			if err := streams[1].WaitEvent(barrierPassed); err != nil {
				return err
			}
			return m.fn()
		}
		if err := measure(m.name+", device barrier first", m.bytes, true, aligned); err != nil {
			return err
		}
	}
	return nil
}
