package producer

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/gemm"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/rs2d"
)

// Overlapped is the own GEMM overlapped with an rs2d context's calls, on a
// GEMM stream of its own: the one place that enqueues the producer, the
// push after the GEMM and the reduce-scatter (GemmRS's calls and the C
// ABI's). Its calls run one at a time.
type Overlapped struct {
	dev      device.Device
	producer *Producer
	stream   device.Stream
	// ready joins the caller's stream into the GEMM stream (A and B are
	// ready); done joins the GEMM stream back; start and end time the GEMM
	// of the last call.
	ready, done, start, end device.Event
	calls                   uint64 // calls whose GEMM was enqueued: done marks the last one's
	summed                  bool   // the last call's GEMM summed the own block (withSum)
}

// NewOverlapped makes the producer, the GEMM stream and the events of
// overlapped calls for a world of world ranks on dev.
func NewOverlapped(dev device.Device, world int) (*Overlapped, error) {
	o := &Overlapped{dev: dev}
	var err error
	if o.stream, err = dev.NewStream(device.Normal); err != nil {
		return nil, err
	}
	for _, e := range []*device.Event{&o.ready, &o.done} {
		if *e, err = dev.NewEvent(); err != nil {
			return nil, errors.Join(err, o.Close())
		}
	}
	for _, e := range []*device.Event{&o.start, &o.end} {
		if *e, err = dev.NewTimedEvent(); err != nil {
			return nil, errors.Join(err, o.Close())
		}
	}
	if o.producer, err = NewProducer(dev, world); err != nil {
		return nil, errors.Join(err, o.Close())
	}
	return o, nil
}

// Stream is the GEMM stream, which a caller may also use for GEMMs of its
// own between calls (the block-by-block producer).
func (o *Overlapped) Stream() device.Stream { return o.stream }

// Producer is the own GEMM's producer.
func (o *Overlapped) Producer() *Producer { return o.producer }

// Events are the events the calls record: ready (on the caller's stream,
// joined into the GEMM stream), done (on the GEMM stream, joined back),
// and the timed start and end of the GEMM.
func (o *Overlapped) Events() (ready, done, start, end device.Event) {
	return o.ready, o.done, o.start, o.end
}

// Enqueue enqueues one overlapped GEMM + reduce-scatter: the GEMM stream
// waits for s, then the own GEMM spec computes the call's input in the
// context's consumption order (order), raising each segment's signal as
// its tiles are stored; the producer's SMs then push the end of the last
// peer's block (rs2d Call.Help, help as HelpRows's pct); the call's
// reduce-scatter goes on s, which then waits for the GEMM stream. Where the
// call lets the GEMM sum the own block (rs2d Call.Sum) it does, on a node
// of more than two ranks only if many (gemmrs.SumsManyBlocks, by default
// SumsMany). raised says whether the call's signals may have been raised.
// On an error s is still ordered after whatever reached the GEMM stream,
// and a call not enqueued is skipped (its signal value passed over).
func (o *Overlapped) Enqueue(ctx context.Context, s device.Stream, spec gemm.Params, order []int, call *rs2d.Call, help int, many bool) (raised bool, err error) {
	summed := false
	if sum, ok := call.Sum(); ok && (sum.Ranks <= 2 || many) {
		spec, summed = withSum(spec, sum)
	}
	raised, err = o.enqueueGemm(s, spec, order, call.Signals())
	o.summed = summed && err == nil
	switch {
	case err == nil && summed:
		call.Summed()
	case err == nil:
		err = call.Help(o.stream, HelpRows(spec, len(order), call.Signals().Segments(), help))
	}
	if err != nil {
		call.Skip() // whatever the GEMM raised releases nothing later
		return raised, errors.Join(err, o.joinBack(s))
	}
	err = call.Enqueue(ctx, s)
	return raised, errors.Join(err, s.WaitEvent(o.done))
}

// withSum is spec with the call's own block summed by the GEMM (gemm.Sum)
// where it can do it (blocks of whole row tiles, at most gemm.MaxSumBlocks,
// C and the output stored with TMA), and whether it can. Summing it there
// removes the reduction pass over the own block after the GEMM; the
// producer's push (Help) is then not made: the GEMM would wait, in its sum,
// for arrivals that wait for the push after it.
func withSum(spec gemm.Params, sum intranode.Sum) (gemm.Params, bool) {
	with := spec
	with.Sum = gemm.Sum{R0: sum.Row0, Rows: sum.Rows, Dst: sum.Dst, Src: sum.Blocks, Stride: sum.Stride,
		Blocks: sum.Ranks, Self: sum.Self, Arrivals: sum.Arrivals, Base: sum.Base, SegRows: sum.SegmentRows}
	if with.Check() != nil {
		return spec, false
	}
	return with, true
}

// enqueueGemm has the GEMM stream wait for s, then enqueues the own GEMM
// between the timing events and records done.
func (o *Overlapped) enqueueGemm(s device.Stream, spec gemm.Params, order []int, sig rs2d.Signals) (raised bool, err error) {
	if err := o.ready.Record(s); err != nil {
		return false, err
	}
	if err := o.stream.WaitEvent(o.ready); err != nil {
		return false, err
	}
	if err := o.start.Record(o.stream); err != nil {
		return false, err
	}
	if err := o.producer.Enqueue(o.stream, spec, order, sig); err != nil {
		return true, fmt.Errorf("the own GEMM: %w", err)
	}
	o.calls++
	if err := o.end.Record(o.stream); err != nil {
		return true, err
	}
	return true, o.done.Record(o.stream)
}

// Summed reports whether the last call's GEMM summed this rank's own block
// (one node of several ranks, the copy engine, whole row tiles): then no
// reduction pass followed it.
func (o *Overlapped) Summed() bool { return o.summed }

// Recover checks whether the last call's GEMM failed on the GEMM stream
// (whose errors are sticky); if it did, it replaces the stream and returns
// an error naming that call and why, after which the next call may run.
// Where the stream cannot be replaced, it and every later call return an
// error saying the producer is broken.
func (o *Overlapped) Recover() error {
	if o.stream == nil {
		return fmt.Errorf("the own GEMM's stream is gone after an earlier failure; make a new context: %w", device.ErrClosed)
	}
	finished, failed := o.done.Done()
	if !finished || failed == nil {
		return nil
	}
	cause := fmt.Errorf("the own GEMM of overlapped call %d on this context failed on its stream (that call's output is not valid): %w", o.calls, failed)
	err := o.stream.Close()
	o.stream = nil
	var fresh device.Stream
	if err == nil {
		fresh, err = o.dev.NewStream(device.Normal)
	}
	if err == nil {
		// A record on the new stream clears the failure that done carries.
		err = o.done.Record(fresh)
	}
	if err != nil {
		if fresh != nil {
			err = errors.Join(err, fresh.Close())
		}
		return errors.Join(cause, fmt.Errorf("the GEMM stream could not be replaced, so the producer is broken: %w", err))
	}
	o.stream = fresh
	return fmt.Errorf("%w; the GEMM stream is replaced and the next call may proceed", cause)
}

// joinBack makes s wait for all work queued so far on the GEMM stream.
func (o *Overlapped) joinBack(s device.Stream) error {
	if err := o.done.Record(o.stream); err != nil {
		return err
	}
	return s.WaitEvent(o.done)
}

// Close releases the producer, the events and the GEMM stream; the work on
// them must be done.
func (o *Overlapped) Close() error {
	var errs []error
	if o.producer != nil {
		errs = append(errs, o.producer.Close())
		o.producer = nil
	}
	for _, e := range []*device.Event{&o.ready, &o.done, &o.start, &o.end} {
		if *e != nil {
			errs = append(errs, (*e).Close())
			*e = nil
		}
	}
	if o.stream != nil {
		errs = append(errs, o.stream.Close())
		o.stream = nil
	}
	return errors.Join(errs...)
}
