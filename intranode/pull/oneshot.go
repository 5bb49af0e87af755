package pull

import (
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode"
	"github.com/seed12530e24/hiercoll/kernels"
)

// One shot: a whole call's blocks of at most the maker's slot bytes are
// pushed by each rank into its peers' landing slots and summed there
// (pull.cu's oneshot), in one launch per node step with one flag per block
// and peer. Small calls are bound by latency, and this takes one crossing
// of NVLink where pulling takes two handshakes and a read round trip; the
// input is read only by its own rank, so it needs no copy in, no
// registration and no reads-done handshake.

// DefaultOneShotInput bounds the calls that go in one shot unless the
// tuning says otherwise: blocks of at most DefaultOneShotInput / GPUs per
// node bytes, i.e. up to that much input per rank on one node. Above it
// the pulled path measured faster (one shot sums only once every block
// landed; pulling overlaps the two).
const DefaultOneShotInput = 2 << 20

// oneShotKernels are the one-shot kernels by element type, then by the
// largest local world size served.
var oneShotKernels = map[dtype.DType]map[int]*device.Kernel{}

func init() {
	for _, dt := range dtype.All {
		oneShotKernels[dt] = map[int]*device.Kernel{}
		for _, l := range widths {
			oneShotKernels[dt][l] = &device.Kernel{Module: module, Name: fmt.Sprintf("hc_oneshot_%v_l%d", dt, l), Block: block,
				Host: oneShotHost(dt)}
		}
	}
}

// oneShotLaunch is one one-shot kernel's arguments.
type oneShotLaunch struct {
	Peers      device.Ptr // lws heap bases as mapped here
	In         device.Ptr // this rank's rows for local rank 0; local rank q's are Stride elements further each
	Stride     int64      // elements
	Out        device.Ptr
	Count      int64 // elements of each block
	LandingOff int64 // heap offset of the landing slots: 2 parities × lws slots
	Slot       int64 // bytes of one slot
	FlagsOff   int64 // heap offset of the flags: a word per block and peer
	LWS, Me    int
	State      device.Ptr // this rank's call state (shared with the pull kernel's launches)
}

func (p oneShotLaunch) args() []any {
	return []any{p.Peers, p.In, p.Stride, p.Out, p.Count, p.LandingOff, p.Slot, p.FlagsOff, int32(p.LWS), int32(p.Me), p.State}
}

// oneShotArgs reads args back into a oneShotLaunch (the twin's side).
func oneShotArgs(args []any) (oneShotLaunch, error) {
	var p oneShotLaunch
	var lws, me int32
	var ok [11]bool
	if len(args) == len(ok) {
		p.Peers, ok[0] = args[0].(device.Ptr)
		p.In, ok[1] = args[1].(device.Ptr)
		p.Stride, ok[2] = args[2].(int64)
		p.Out, ok[3] = args[3].(device.Ptr)
		p.Count, ok[4] = args[4].(int64)
		p.LandingOff, ok[5] = args[5].(int64)
		p.Slot, ok[6] = args[6].(int64)
		p.FlagsOff, ok[7] = args[7].(int64)
		lws, ok[8] = args[8].(int32)
		me, ok[9] = args[9].(int32)
		p.State, ok[10] = args[10].(device.Ptr)
	}
	p.LWS, p.Me = int(lws), int(me)
	for _, b := range ok {
		if !b {
			return oneShotLaunch{}, fmt.Errorf("pull: one-shot kernel arguments %v: %w", args, device.ErrInvalidArgument)
		}
	}
	if p.LWS < 2 || p.LWS > MaxLocalSize || p.Me < 0 || p.Me >= p.LWS || p.Count < 0 || p.Slot < 0 {
		return oneShotLaunch{}, fmt.Errorf("pull: one-shot kernel arguments %v: %w", args, device.ErrInvalidArgument)
	}
	return p, nil
}

// oneShotHost is the one-shot kernel's Go twin: the whole grid as one
// block (one flag per peer), the same parity, flags and waits, the same sum
// in local-rank order (kernels.ReduceRange), so its bits equal the GPU's.
func oneShotHost(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		p, err := oneShotArgs(args)
		if err != nil {
			return err
		}
		launch, heaps, err := twinEntry(mem, p.State, p.Peers, p.LWS)
		if err != nil {
			return err
		}
		es := int64(dt.Size())
		bytes := p.Count * es
		parity := int64(launch & 1)
		slot := func(dst, src int) device.Ptr {
			return heaps[dst].Add(p.LandingOff + (parity*int64(p.LWS)+int64(src))*p.Slot)
		}
		block := func(q int) ([]byte, error) { return mem.Bytes(p.In.Add(int64(q)*p.Stride*es), bytes) }
		for i := 1; i < p.LWS; i++ {
			q := (p.Me + i) % p.LWS
			src, err := block(q)
			if err != nil {
				return fmt.Errorf("pull: this rank's rows for local rank %d: %w", q, err)
			}
			dst, err := mem.Bytes(slot(q, p.Me), bytes)
			if err != nil {
				return fmt.Errorf("pull: local rank %d's landing slot: %w", q, err)
			}
			copy(dst, src)
		}
		for q := 0; q < p.LWS; q++ {
			if q != p.Me {
				if err := mem.Store32(heaps[q].Add(p.FlagsOff+4*int64(p.Me)), launch); err != nil {
					return err
				}
			}
		}
		abort := p.State.Add(4 * stateAbort)
		views := make([][]byte, p.LWS)
		for q := range views {
			if q == p.Me {
				if views[q], err = block(q); err != nil {
					return fmt.Errorf("pull: this rank's own rows: %w", err)
				}
				continue
			}
			w := device.Word{Addr: heaps[p.Me].Add(p.FlagsOff + 4*int64(q)), Label: fmt.Sprintf("pull one-shot flag of local rank %d", q)}
			if err := mem.Wait32Or(w, device.GEQ, launch, abort); err != nil {
				return err
			}
			if views[q], err = mem.Bytes(slot(p.Me, q), bytes); err != nil {
				return err
			}
		}
		dst, err := mem.Bytes(p.Out, bytes)
		if err != nil {
			return fmt.Errorf("pull: output: %w", err)
		}
		kernels.ReduceRange(dt, dst, views, 0, p.Count)
		return mem.Store32(p.State.Add(4*stateLaunches), launch)
	}
}

// oneShot reports whether call goes in one shot: whole calls (no rounds)
// on nodes of several GPUs whose blocks fit a landing slot.
func (e *Engine) oneShot(call intranode.Call) bool {
	return e.m.slot > 0 && int64(call.RowsPer)*e.env.RowBytes() <= e.m.slot
}

// oneShotStep launches the one-shot kernel for step: this rank's rows for
// every local rank of node step.Node, read from the caller's input.
func (e *Engine) oneShotStep(s device.Stream, step intranode.Step) (intranode.Done, error) {
	lws, me, rowBytes := e.env.LocalSize(), e.env.Place.LocalRank, e.env.RowBytes()
	k, ok := oneShotKernels[e.env.DType][widthFor(lws)]
	if !ok {
		return intranode.Done{}, fmt.Errorf("pull: no one-shot kernel for %v on %d GPUs per node: %w", e.env.DType, lws, device.ErrNotSupported)
	}
	p := oneShotLaunch{
		Peers:      e.heaps(),
		In:         step.Input.Add(int64(step.Node*lws*step.RowsPer) * rowBytes),
		Stride:     int64(step.RowsPer) * int64(e.env.Cols),
		Out:        step.ReduceTo,
		Count:      int64(step.Rows) * int64(e.env.Cols),
		LandingOff: e.m.landing.Off,
		Slot:       e.m.slot,
		FlagsOff:   e.m.oneShotFlags.Off,
		LWS:        lws,
		Me:         me,
		State:      e.state(0),
	}
	if err := e.env.Dev.Launch(s, k, grid(rowBytes, step.Rows, e.m.maxGrid()), p.args()...); err != nil {
		return intranode.Done{}, fmt.Errorf("pull: one-shot node step %d: %w", step.Node, err)
	}
	return intranode.Done{Landed: s, Reduced: s}, nil
}
