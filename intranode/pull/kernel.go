package pull

import (
	_ "embed"
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
)

//go:embed pull.cu
var source string

var module = &device.Module{Name: "hiercoll_pull", Source: kernels.PeerSource + source}

const (
	// block is the CUDA block size of the pull kernel.
	block = 512
	// maxBlocks bounds a launch's grid.
	maxBlocks = 1024
	// MaxLocalSize is the most GPUs per node the kernel serves.
	MaxLocalSize = 8
	// bulkShared is the bulk kernels' dynamic shared memory: their stages
	// (pull.cu's PB_SHARED) and the stages' mbarriers.
	bulkShared = 128<<10 + 128
)

// bulkMinBytes is the smallest block (bytes this rank reduces in one
// launch) read with bulk copies: below it the vector loads measured faster,
// above it the bulk copies (RESULTS.md).
var bulkMinBytes int64 = 32 << 20

// bulkRoundsMinBlock is the smallest block (bytes of one destination's rows
// per rank, the whole call's) whose rounds under a bound are read with bulk
// copies whatever each round's size: on 2 and 4 H200s that took 1.2–2.5% off
// calls of 512 MiB and 1 GiB blocks, changed nothing at 64–256 MiB and lost
// 2% at 32 MiB (RESULTS.md).
var bulkRoundsMinBlock int64 = 512 << 20

// The words of the call state (this rank's own memory).
const (
	stateLaunches = iota // launches run so far: the flag value of the last
	stateFinished        // blocks finished of the running launch
	stateAbort           // non-zero: every wait ends (a peer is gone)
	stateWords
)

// Phases of a launch: the handshakes it makes.
const (
	phaseArrive = 1 // wait until every peer's input is complete
	phaseDone   = 2 // end only once every peer finished reading this input
)

// The kernels by loads (false: vector loads, true: bulk copies), element
// type, then the largest local world size served (the loops unroll over
// it). The twin is the same for both loads.
var pullKernels = map[bool]map[dtype.DType]map[int]*device.Kernel{}

// widths are the local world sizes the kernels are compiled for.
var widths = []int{2, 4, 8}

func init() {
	for _, bulk := range []bool{false, true} {
		pullKernels[bulk] = map[dtype.DType]map[int]*device.Kernel{}
		for _, dt := range dtype.All {
			pullKernels[bulk][dt] = map[int]*device.Kernel{}
			for _, l := range widths {
				k := &device.Kernel{Module: module, Name: fmt.Sprintf("hc_pull_%v_l%d", dt, l), Block: block, Host: host(dt)}
				if bulk {
					k.Name, k.Shared = fmt.Sprintf("hc_pull_bulk_%v_l%d", dt, l), bulkShared
				}
				pullKernels[bulk][dt][l] = k
			}
		}
	}
}

// widthFor is the smallest width serving nodes of lws GPUs (0: none).
func widthFor(lws int) int {
	for _, l := range widths {
		if lws <= l {
			return l
		}
	}
	return 0
}

// kernelFor is the kernel for dt on nodes of lws GPUs, with bulk copies or
// vector loads.
func kernelFor(dt dtype.DType, lws int, bulk bool) (*device.Kernel, error) {
	if k, ok := pullKernels[bulk][dt][widthFor(lws)]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("pull: no kernel for %v on %d GPUs per node (at most %d): %w", dt, lws, MaxLocalSize, device.ErrNotSupported)
}

// Prepare loads the kernels for dt on nodes of lws GPUs (see
// device.Device.Prepare: before anything collective is enqueued): they
// share one module, so this compiles the one-shot kernels too.
func Prepare(dev device.Device, dt dtype.DType, lws int) error {
	for _, bulk := range []bool{false, true} {
		k, err := kernelFor(dt, lws, bulk)
		if err != nil {
			return err
		}
		if err := dev.Prepare(k); err != nil {
			return fmt.Errorf("pull: preparing %s: %w", k.Name, err)
		}
	}
	if k, ok := oneShotKernels[dt][widthFor(lws)]; ok {
		if err := dev.Prepare(k); err != nil {
			return fmt.Errorf("pull: preparing %s: %w", k.Name, err)
		}
	}
	return nil
}

// launch is one pull kernel's arguments.
type launch struct {
	Peers    device.Ptr // lws heap bases as mapped here (the flags, the landing slots)
	Inputs   device.Ptr // lws input bases as mapped here: Peers, or a registered input's views
	Off      int64      // offset from the input bases of the block this rank reduces
	Out      device.Ptr
	Count    int64 // elements
	FlagsOff int64 // heap offset of the handshake flags
	LWS, Me  int
	Phases   int
	State    device.Ptr // this rank's call state
	// MaxGrid is the flags per set and peer: the most blocks any launch
	// of the engine has.
	MaxGrid int
	Tag     uint32 // what the launch reads (inputTag: 0 the symmetric input whole)
	// Own, where not 0, is where this rank's rows lie instead of its
	// table entry + Off (the rounds and copied-in calls read them from the
	// caller's input).
	Own device.Ptr
}

func (p launch) args() []any {
	return []any{p.Peers, p.Inputs, p.Off, p.Out, p.Count, p.FlagsOff, int32(p.LWS), int32(p.Me), int32(p.Phases), p.State,
		int32(p.MaxGrid), p.Tag, p.Own}
}

// launchArgs reads args back into a launch (the twin's side of args).
func launchArgs(args []any) (launch, error) {
	bad := func() (launch, error) {
		return launch{}, fmt.Errorf("pull: kernel arguments %v: %w", args, device.ErrInvalidArgument)
	}
	if len(args) != 13 {
		return bad()
	}
	var p launch
	var lws, me, phases, maxGrid int32
	var ok [13]bool
	p.Peers, ok[0] = args[0].(device.Ptr)
	p.Inputs, ok[1] = args[1].(device.Ptr)
	p.Off, ok[2] = args[2].(int64)
	p.Out, ok[3] = args[3].(device.Ptr)
	p.Count, ok[4] = args[4].(int64)
	p.FlagsOff, ok[5] = args[5].(int64)
	lws, ok[6] = args[6].(int32)
	me, ok[7] = args[7].(int32)
	phases, ok[8] = args[8].(int32)
	p.State, ok[9] = args[9].(device.Ptr)
	maxGrid, ok[10] = args[10].(int32)
	p.Tag, ok[11] = args[11].(uint32)
	p.Own, ok[12] = args[12].(device.Ptr)
	p.LWS, p.Me, p.Phases, p.MaxGrid = int(lws), int(me), int(phases), int(maxGrid)
	if ok != [13]bool{true, true, true, true, true, true, true, true, true, true, true, true, true} ||
		p.LWS < 1 || p.LWS > MaxLocalSize || p.Me < 0 || p.Me >= p.LWS || p.Count < 0 || p.MaxGrid < 1 || p.Tag > 0xff {
		return bad()
	}
	return p, nil
}

// run enqueues the kernel on s with grid blocks, the bulk kernel where bulk.
func run(dev device.Device, s device.Stream, dt dtype.DType, grid int, p launch, bulk bool) error {
	k, err := kernelFor(dt, p.LWS, bulk)
	if err != nil {
		return err
	}
	if grid < 1 || grid > p.MaxGrid || p.MaxGrid > maxBlocks || p.Me < 0 || p.Me >= p.LWS || p.State == 0 {
		return fmt.Errorf("pull: launch of %d blocks on local rank %d of %d: %w", grid, p.Me, p.LWS, device.ErrInvalidArgument)
	}
	return dev.Launch(s, k, grid, p.args()...)
}

// host is the kernel's Go twin, which the CPU backend runs: the whole grid
// as one block (one set of flags), the same handshakes and waits, the same
// sum in local-rank order (kernels.ReduceViews), so its bits equal the GPU's.
func host(dt dtype.DType) device.HostFunc {
	return func(mem device.HostMemory, grid int, args []any) error {
		p, err := launchArgs(args)
		if err != nil {
			return err
		}
		launch, heaps, err := twinEntry(mem, p.State, p.Peers, p.LWS)
		if err != nil {
			return err
		}
		if p.Phases&phaseArrive != 0 {
			if err := handshake(mem, p, heaps, flagsArrive, launch, "arrival"); err != nil {
				return err
			}
		}
		if err := sum(dt, mem, p); err != nil {
			return err
		}
		if p.Phases&phaseDone != 0 {
			if err := handshake(mem, p, heaps, flagsDone, launch, "reads done"); err != nil {
				return err
			}
		}
		return mem.Store32(p.State.Add(4*stateLaunches), launch)
	}
}

// twinEntry is what a twin reads at its launch's entry: the launch number
// (the call state's launches run so far, plus one) and the node's heaps.
func twinEntry(mem device.HostMemory, state, peers device.Ptr, lws int) (uint32, []device.Ptr, error) {
	words, err := mem.Bytes(state, 4*stateWords)
	if err != nil {
		return 0, nil, fmt.Errorf("pull: call state: %w", err)
	}
	heaps, err := peerTable(mem, peers, lws)
	return binary.LittleEndian.Uint32(words[4*stateLaunches:]) + 1, heaps, err
}

func peerTable(mem device.HostMemory, table device.Ptr, lws int) ([]device.Ptr, error) {
	b, err := mem.Bytes(table, int64(lws)*8)
	if err != nil {
		return nil, fmt.Errorf("pull: peer table: %w", err)
	}
	heaps := make([]device.Ptr, lws)
	for i := range heaps {
		heaps[i] = device.Ptr(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return heaps, nil
}

// flagWord is the offset of block b's flag of set for source local rank
// src, as pull.cu lays them out (maxGrid flags per set and peer).
func flagWord(flagsOff int64, lws, maxGrid, set, b, src int) int64 {
	return flagsOff + 4*(int64(set*maxGrid+b)*int64(lws)+int64(src))
}

// sum is the launch's work: the block summed from the peers' inputs in
// local-rank order (the own rows at p.Own where given); nothing for a
// launch of no elements (the copy engine's arrival).
func sum(dt dtype.DType, mem device.HostMemory, p launch) error {
	if p.Count == 0 {
		return nil
	}
	inputs, err := peerTable(mem, p.Inputs, p.LWS)
	if err != nil {
		return err
	}
	if p.Own != 0 {
		inputs[p.Me] = p.Own.Add(-p.Off)
	}
	es := int64(dt.Size())
	views := make([][]byte, p.LWS)
	for q := range views {
		if views[q], err = mem.Bytes(inputs[q].Add(p.Off), p.Count*es); err != nil {
			return fmt.Errorf("pull: the input block of local rank %d: %w", q, err)
		}
	}
	dst, err := mem.Bytes(p.Out, p.Count*es)
	if err != nil {
		return fmt.Errorf("pull: output: %w", err)
	}
	kernels.ReduceRange(dt, dst, views, 0, p.Count)
	return nil
}

// The flag sets, as pull.cu numbers them (PF_*).
const (
	flagsArrive = iota
	flagsDone
	flagSets
)

// The tags of the symmetric input's layouts other than the whole input
// read by the pull kernel (tag 0: zero copy, or copied in whole): a call
// copied in in pieces, in rounds staged in it, or read whole by the copy
// engine (zero copy: cepull.go, whose arrival carries it). A rank's peers
// read its symmetric input as its tag says and wait for the handshakes of
// their own path, so ranks whose tags differ would read what nobody wrote,
// or wait for words nobody raises.
const (
	tagPieces     = 0x80
	tagRounds     = 0x81
	tagCopyEngine = 0x82
)

// inputTag is the 8-bit tag of what a launch reads, carried in its arrival
// flags: for registration serial (1, 2, ...) 1 to 127 (serials 127 apart
// share a tag), for the symmetric input (serial 0) its layout's: 0 whole,
// tagPieces, tagRounds, tagCopyEngine.
func inputTag(serial uint32, layout uint32) uint32 {
	if serial == 0 {
		return layout
	}
	return 1 + (serial-1)%127
}

// handshake is pull_handshake for block 0: raise this rank's flag (launch
// << 8 | tag, the tag p.Tag at the arrival) on every peer, wait for
// every peer's here, and at the arrival check that every peer reads the
// same input.
func handshake(mem device.HostMemory, p launch, heaps []device.Ptr, set int, launch uint32, what string) error {
	tag := uint32(0)
	if set == flagsArrive {
		tag = p.Tag
	}
	for q := 0; q < p.LWS; q++ {
		if q != p.Me {
			if err := mem.Store32(heaps[q].Add(flagWord(p.FlagsOff, p.LWS, p.MaxGrid, set, 0, p.Me)), launch<<8|tag); err != nil {
				return err
			}
		}
	}
	abort := p.State.Add(4 * stateAbort)
	for q := 0; q < p.LWS; q++ {
		if q == p.Me {
			continue
		}
		at := heaps[p.Me].Add(flagWord(p.FlagsOff, p.LWS, p.MaxGrid, set, 0, q))
		w := device.Word{Addr: at, Label: fmt.Sprintf("pull %s flag of local rank %d", what, q)}
		if err := mem.Wait32Or(w, device.GEQ, launch<<8, abort); err != nil {
			return err
		}
		b, err := mem.Bytes(at, 4)
		if err != nil {
			return err
		}
		if theirs := binary.LittleEndian.Uint32(b) & 0xff; theirs != tag {
			return fmt.Errorf("pull: local rank %d reads %s, local rank %d %s: every rank calls with its registered input "+
				"or none, and where a copied-in call goes in pieces or rounds every rank with Input or none: %w",
				q, inputName(theirs), p.Me, inputName(tag), device.ErrInvalidArgument)
		}
	}
	return nil
}

// inputName names what a tag reads.
func inputName(tag uint32) string {
	switch tag {
	case 0:
		return "the symmetric input whole (zero copy or copied in whole)"
	case tagPieces:
		return "the symmetric input copied in in pieces"
	case tagRounds:
		return "rounds staged in the symmetric input"
	case tagCopyEngine:
		return "the symmetric input whole, pulled by the copy engine"
	}
	return fmt.Sprintf("a registered input (tag %d)", tag)
}
