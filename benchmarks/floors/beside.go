package floors

import (
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/gemm"
)

// Beside a GEMM (Options.BesideGemm): C [n·rows, N] = A [n·rows, K] ·
// B [K, N] (N=8192, K=2048 unless Options.GemmN, GemmK say otherwise) in n
// row blocks of Bytes each on streams[1], C being the source; the copies move block (me+i) to rank me+i on streams[0]. Each
// measurement runs twice: as is, and with every iteration starting at a
// device barrier (align, on streams[0], which the GEMM's stream then waits
// for), so that the ranks move in step.
const besideCols, besideK = 8192, 2048

// beside is the state of the measurements beside a GEMM.
type beside struct {
	*lab
	mm        device.Matmul
	a, b      device.Ptr
	rows      int
	cols, k   int            // the GEMM's N and K
	blockDone []device.Event // block i's GEMM ended (or copy i, where chained)
	passed    device.Event   // the device barrier passed, for the GEMM's stream
}

func (l *lab) besideGemm() (err error) {
	cols, k := l.o.gemmShape()
	if l.o.Bytes%int64(2*cols) != 0 {
		return fmt.Errorf("floors: beside a GEMM, bytes per transfer must be a multiple of %d", 2*cols)
	}
	x := &beside{lab: l, rows: int(l.o.Bytes / int64(2*cols)), cols: cols, k: k}
	defer func() { err = errors.Join(err, x.close()) }()
	if err := x.open(); err != nil {
		return err
	}
	for _, m := range x.measurements() {
		if err := l.measure(m.name, m.bytes, true, m.fn); err != nil {
			return err
		}
		aligned := func() error {
			if err := l.align(); err != nil {
				return err
			}
			if err := x.passed.Record(l.streams[0]); err != nil { // the GEMM starts after the barrier too
				return err
			}
			if err := l.streams[1].WaitEvent(x.passed); err != nil {
				return err
			}
			return m.fn()
		}
		if err := l.measure(m.name+", device barrier first", m.bytes, true, aligned); err != nil {
			return err
		}
	}
	return nil
}

// open takes the GEMM's operands (constant bf16) and the events.
func (x *beside) open() (err error) {
	dev, n := x.r.Dev, x.n
	if x.mm, err = device.MatmulOf(dev); err != nil {
		return err
	}
	if err := gemm.Prepare(dev, dtype.BF16); err != nil { // before anything is queued: loading can wait for it
		return err
	}
	if x.a, err = dev.Alloc(int64(n*x.rows*x.k) * 2); err != nil {
		return err
	}
	if x.b, err = dev.Alloc(int64(x.k*x.cols) * 2); err != nil {
		return err
	}
	for _, buf := range []struct {
		p     device.Ptr
		elems int
	}{{x.a, n * x.rows * x.k}, {x.b, x.k * x.cols}} {
		if err := dev.Memset32(x.streams[1], buf.p, 0x3c003c00, int64(buf.elems/2)); err != nil { // bf16 pairs of 0.0078
			return err
		}
	}
	x.blockDone = make([]device.Event, n)
	for _, e := range append([]*device.Event{&x.passed}, eventPtrs(x.blockDone)...) {
		if *e, err = dev.NewEvent(); err != nil {
			return err
		}
	}
	return nil
}

func eventPtrs(es []device.Event) []*device.Event {
	ps := make([]*device.Event, len(es))
	for i := range es {
		ps[i] = &es[i]
	}
	return ps
}

func (x *beside) close() error {
	var errs []error
	for _, e := range append([]device.Event{x.passed}, x.blockDone...) {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	for _, p := range []device.Ptr{x.a, x.b} {
		if p != 0 {
			errs = append(errs, x.r.Dev.Free(p))
		}
	}
	return errors.Join(errs...)
}

// dest is the rank block i goes to: me+i+1, the own block last.
func (x *beside) dest(i int) int { return (x.me + i + 1) % x.n }

// spec is the GEMM of block i on sms SMs (0: all).
func (x *beside) spec(i, sms int) device.GemmSpec {
	d := x.dest(i)
	return device.GemmSpec{M: x.rows, N: x.cols, K: x.k, DType: dtype.BF16,
		A: x.a.Add(int64(d*x.rows*x.k) * 2), B: x.b, C: x.block(d), SMs: sms}
}

// remoteGemm enqueues the n block GEMMs on streams[1] on every SM, each
// peer's block of C written into its slot in that peer's heap (the
// GEMM's stores crossing NVLink: no copy after it), the own block locally.
func (x *beside) remoteGemm() error {
	return x.blockGemms(true, func(spec device.GemmSpec) error { return x.mm.Gemm(x.streams[1], spec) })
}

// blockGemms runs run on the n block GEMMs' specs in turn (all SMs), each
// peer's block of C in its slot in that peer's heap where remote.
func (x *beside) blockGemms(remote bool, run func(device.GemmSpec) error) error {
	for i := 0; i < x.n; i++ {
		spec := x.spec(i, 0)
		if d := x.dest(i); remote && d != x.me {
			spec.C = x.slot(d, x.me)
		}
		if err := run(spec); err != nil {
			return err
		}
	}
	return nil
}

// ownGemm enqueues hiercoll's own GEMM on streams[1]: the n blocks in one
// launch (whole, C in the source buffer) or one launch per block, each
// peer's block of C stored straight into its slot in that peer's heap
// where remote (the TMA stores crossing NVLink), else locally.
func (x *beside) ownGemm(whole, remote bool) error {
	if whole {
		return gemm.Launch(x.r.Dev, x.streams[1], gemm.Params{GemmSpec: device.GemmSpec{M: x.n * x.rows, N: x.cols, K: x.k,
			DType: dtype.BF16, A: x.a, B: x.b, C: x.block(0)}})
	}
	return x.blockGemms(remote, func(spec device.GemmSpec) error {
		return gemm.Launch(x.r.Dev, x.streams[1], gemm.Params{GemmSpec: spec})
	})
}

// copyOn enqueues on st the copy of block i to its rank.
func (x *beside) copyOn(st device.Stream, i int) error {
	d := x.dest(i)
	return x.r.Dev.Copy(st, x.slot(d, x.me), x.block(d), x.o.Bytes)
}

// gemm enqueues the n block GEMMs on streams[1] on sms SMs (0: all),
// recording each block's event when events.
func (x *beside) gemm(events bool, sms int) error {
	for i := 0; i < x.n; i++ {
		if err := x.mm.Gemm(x.streams[1], x.spec(i, sms)); err != nil {
			return err
		}
		if events {
			if err := x.blockDone[i].Record(x.streams[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// copies enqueues on streams[0] the copies of the n-1 peers' blocks in turn.
func (x *beside) copies() error {
	for i := 0; i < x.n-1; i++ {
		if err := x.copyOn(x.streams[0], i); err != nil {
			return err
		}
	}
	return nil
}

// repeatTo enqueues on streams[0] n-1 copies of a block's size to rank
// me+step, from the first n-1 blocks.
func (x *beside) repeatTo(step int) error {
	for i := 0; i < x.n-1; i++ {
		if err := x.r.Dev.Copy(x.streams[0], x.slot((x.me+step)%x.n, x.me), x.block(i), x.o.Bytes); err != nil {
			return err
		}
	}
	return nil
}

// chained enqueues the copies in turn, a stream per peer, each after the
// previous copy (the first after the previous iteration's last; an event
// never recorded is no wait).
func (x *beside) chained() error {
	n := x.n
	for i := 0; i < n-1; i++ {
		st := x.streams[1+i%(len(x.streams)-1)]
		if err := st.WaitEvent(x.blockDone[(i+n-2)%(n-1)]); err != nil {
			return err
		}
		if err := x.copyOn(st, i); err != nil {
			return err
		}
		if err := x.blockDone[i].Record(st); err != nil {
			return err
		}
	}
	return nil
}

// perPeer enqueues a block's copy to every peer (or, reads, from every
// peer's heap into this rank's), each peer's on a stream of its own
// (streams[2..]), beside the GEMM on streams[1].
func (x *beside) perPeer(reads bool) error {
	for i := 1; i < x.n; i++ {
		q, st := (x.me+i)%x.n, x.streams[1+i]
		var err error
		if reads {
			err = x.r.Dev.Copy(st, x.slot(x.me, q), x.slot(q, q), x.o.Bytes)
		} else {
			err = x.r.Dev.Copy(st, x.slot(q, x.me), x.block(q), x.o.Bytes)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// afterBlocks runs each block's GEMM on sms SMs (0: all), then on
// streams[0] push(i) of block i to its rank after the block's event.
func (x *beside) afterBlocks(sms int, push func(i int) error) error {
	if err := x.gemm(true, sms); err != nil {
		return err
	}
	for i := 0; i < x.n-1; i++ {
		if err := x.streams[0].WaitEvent(x.blockDone[i]); err != nil {
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
func (x *beside) smPushes(g int) func() error {
	return func() error {
		return x.afterBlocks(max(1, x.sms-g), func(i int) error {
			d := x.dest(i)
			return x.smCopy(x.streams[0], 2*g, x.slot(d, x.me), x.block(d), x.o.Bytes)
		})
	}
}

type measurement struct {
	name  string
	bytes int64
	fn    func() error
}

// measurements are the patterns measured beside the GEMM, each moving the
// n-1 peers' blocks.
func (x *beside) measurements() []measurement {
	n := x.n
	moved := int64(n-1) * x.o.Bytes
	label := fmt.Sprintf("%d blocks of %dx%dx%d bf16", n, x.rows, x.cols, x.k)
	ms := []measurement{
		{"GEMM alone, " + label, moved, func() error { return x.gemm(false, 0) }},
		{"GEMM storing each peer's block of C straight into that peer's heap", moved, x.remoteGemm},
		{"own GEMM alone, one launch", moved, func() error { return x.ownGemm(true, false) }},
		{"own GEMM alone, a launch per block", moved, func() error { return x.ownGemm(false, false) }},
		{"own GEMM, a launch per block, storing each peer's block straight into that peer's heap", moved, func() error { return x.ownGemm(false, true) }},
		{fmt.Sprintf("CE copies to rank+1..+%d in turn, alone", n-1), moved, x.copies},
		{fmt.Sprintf("CE copies to rank+1..+%d in turn, a stream per peer, chained by events", n-1), moved, x.chained},
		{fmt.Sprintf("CE copies to rank+1, %d times in turn, alone", n-1), moved, func() error { return x.repeatTo(1) }},
	}
	if n > 2 { // on 2 GPUs rank+2 is the rank itself
		ms = append(ms, measurement{fmt.Sprintf("CE copies to rank+2, %d times in turn, alone", n-1), moved, func() error { return x.repeatTo(2) }})
	}
	return append(ms, []measurement{
		{fmt.Sprintf("CE copies to rank+%d, %d times in turn, alone", n-1, n-1), moved, func() error { return x.repeatTo(n - 1) }},
		{"GEMM and those copies at once (GB/s: copies)", moved, func() error { return errors.Join(x.gemm(false, 0), x.copies()) }},
		{fmt.Sprintf("GEMM and %d copies to rank+1 at once", n-1), moved, func() error { return errors.Join(x.gemm(false, 0), x.repeatTo(1)) }},
		{"each copy after its block's GEMM (events)", moved, func() error {
			return x.afterBlocks(0, func(i int) error { return x.copyOn(x.streams[0], i) })
		}},
		{fmt.Sprintf("GEMM and CE copies to all %d peers at once, a stream per peer", n-1), moved, func() error { return errors.Join(x.gemm(false, 0), x.perPeer(false)) }},
		{fmt.Sprintf("GEMM and CE reads from all %d peers at once, a stream per peer (the readers' GEMMs beside too)", n-1), moved,
			func() error { return errors.Join(x.gemm(false, 0), x.perPeer(true)) }},
		{"the same, pushed by SM stores on 16 SMs, the GEMM on the rest", moved, x.smPushes(16)},
		{"the same, pushed by SM stores on 32 SMs, the GEMM on the rest", moved, x.smPushes(32)},
	}...)
}
