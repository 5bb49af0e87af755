// Package intranode is the first dimension of ReduceScatter2D: the reduce-
// scatter among the GPUs of one node, for the rows destined to one node.
//
// For a node step, every rank copies, with the copy engine and no SMs, its
// rows for each node peer into that peer's scatter buffer, in rank-swizzle
// order (peer = (localRank+i+1) % lws, so at any moment each GPU sends to one
// peer and receives from one: balanced links). After each copy it raises the
// peer's arrival word for its slot. The reduction stream of each rank waits
// until the lws-1 peer blocks have arrived and sums them, with its own block
// read straight from its input, with the reduce kernel on a bounded number
// of SMs.
//
// Kinds of 32-bit words, all in the pad of the rank that waits on them, all
// monotonic, so nothing ever needs resetting:
//   - ready[src]  = epoch: src has finished the previous call and may receive.
//   - arrived[src] = seq: src's block of the (step, chunk) numbered seq landed.
//   - gemm[dest]  = epoch: a GEMM producer finished the rows for rank dest
//     (only with OverlapWithGEMM).
//   - placed[node*lws+src] = epoch: src's producer stored its rows for this
//     rank's node step `node` straight into this rank's scatter buffer
//     (placed steps, below).
//   - permit[dest] = seq (in the sender's pad): dest has received the block
//     of the rank that sends to it one step earlier (the sender's next local
//     rank), for the step whose last arrival is numbered seq (pacing, below).
//
// Pacing. The ring order keeps each GPU receiving from one peer at a time
// only while the ranks move in step; when they drift apart (one rank's
// call started later, a copy waited for its GEMM block), two peers may send
// to one GPU at once. With a GEMM producer (peer by peer), a rank's copy to
// the peer i+1 places ahead therefore also waits for a permit from the rank
// one place after it, which sends to that peer one step earlier: its copy
// stream writes the permit right after that copy, so each GPU receives one
// block at a time. Measured on 4 H200s (benchmarks/RESULTS.md), pacing made
// the copy-engine reduce-scatter of 8192×8192 bf16 without a GEMM 10–15%
// faster (fourth session, the permit then relayed by the receiver's
// reduction stream). Written by the previous sender it takes one hop
// instead of two and leaves the reduction stream nothing but its own waits;
// no change in the overlapped call's time was measured (fifth session).
//
// The node step's rows are split into chunks so that the reduction of chunk c
// overlaps the scatter of chunk c+1.
//
// A placed step moves no rows at all: the producer (a GEMM writing its
// output tile by tile) stores each peer's rows straight into that peer's
// scatter buffer, at Target, and raises the peer's placed word; the step is
// only the reduction, which waits for the placed words.
//
// Two engines move the rows. The copy engine (Scatter + Reduce) uses no SMs,
// which suits overlap with a GEMM that holds them. The SM engine (PushReduce)
// does a whole node step in one kernel: push blocks store the rows into the
// peers' scatter buffers and count arrivals with release atomics, reduce
// blocks wait on the counts; on NVLink with traffic both ways SM stores keep
// a higher rate than the copy engine, and one launch per step is the least
// latency there is.
package intranode

import (
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/kernels"
	"github.com/seed12530e24/hiercoll/symm"
)

// RankSwizzle returns the order in which local rank lr scatters to its node
// peers: lr+1, lr+2, ..., ending with itself.
func RankSwizzle(lr, lws int) []int {
	order := make([]int, lws)
	for i := range order {
		order[i] = (lr + i + 1) % lws
	}
	return order
}

// Buffers are the symmetric regions the stage uses.
type Buffers struct {
	Heap       *symm.Heap
	ScatterBuf symm.Region // MaxM × N elements: one region of M_per_node rows per node step
	Ready      symm.Pad    // lws words, by source local rank
	Arrived    symm.Pad    // lws words, by source local rank
	Gemm       symm.Pad    // world words, by destination rank (GEMM overlap)
	Early      symm.Pad    // world words, by destination rank: the first part of its rows (GEMM overlap, Step.EarlyRows)
	Placed     symm.Pad    // nnodes × lws words, by node step and source local rank (placed steps)
	Permits    symm.Pad    // lws words, by receiving local rank (pacing, with GEMM overlap)
	Counters   symm.Pad    // SM engine: lws × kernels.MaxPushChunks arrival counters
	PeerTable  symm.Region // SM engine: lws heap base addresses as mapped here
}

// AddTo lays out the stage's regions for a world of place's shape with
// scatter bytes of scatter buffer.
func (b *Buffers) AddTo(l *symm.Layout, place symm.Place, scatter int64) {
	lws, world := place.Shape.LocalSize, place.Shape.World()
	b.Ready = l.AddPad("ready", lws)
	b.Arrived = l.AddPad("arrived", lws)
	b.Gemm = l.AddPad("gemm signals", world)
	b.Early = l.AddPad("early gemm signals", world)
	b.Placed = l.AddPad("placed", place.Shape.Nodes*lws)
	b.Permits = l.AddPad("permits", lws)
	b.Counters = l.AddPad("arrival counters", lws*kernels.MaxPushChunks)
	b.PeerTable = l.Add("peer table", int64(lws)*8)
	b.ScatterBuf = l.Add("scatter", scatter)
}

// Stage is one rank's intra-node reduce-scatter.
type Stage struct {
	dev     device.Device
	place   symm.Place
	buf     Buffers
	dt      dtype.DType
	n       int // columns
	overlap bool
	seq     uint32 // last arrival sequence number used (same on every rank)
	pushed  uint32 // SM engine: push blocks launched so far (every counter's target)
}

// New returns the stage of the rank at place. The node team must be mapped.
func New(dev device.Device, place symm.Place, buf Buffers, dt dtype.DType, cols int, overlap bool) (*Stage, error) {
	if !buf.Heap.Mapped(place.NodeTeam()) {
		return nil, fmt.Errorf("intranode: rank %d cannot map every GPU of its node (peer access over NVLink or same host needed): %w",
			place.Rank, device.ErrNotSupported)
	}
	// The SM engine's kernel finds the peers' heaps through a table in device memory.
	table := make([]byte, 0, 8*place.Shape.LocalSize)
	for lr := 0; lr < place.Shape.LocalSize; lr++ {
		base, _ := buf.Heap.Peer(place.NodePeer(lr))
		table = binary.LittleEndian.AppendUint64(table, uint64(base))
	}
	if err := dev.CopyToDevice(buf.Heap.Local().Add(buf.PeerTable.Off), table); err != nil {
		return nil, fmt.Errorf("intranode: writing the peer table: %w", err)
	}
	return &Stage{dev: dev, place: place, buf: buf, dt: dt, n: cols, overlap: overlap}, nil
}

// Step is one node step of a call: the rows destined to node Node.
type Step struct {
	Node     int        // the node whose rows are reduced (cur)
	Input    device.Ptr // this rank's input: M × N
	RowsPer  int        // M_per_rank
	Chunks   int        // chunks per block (>= 1)
	Epoch    uint32     // the call's epoch
	ReduceTo device.Ptr // where the node-reduced M_per_rank × N block goes
	Grid     int        // reduce kernel blocks
	// Placed: the peers' producers stored their rows into this rank's
	// scatter buffer themselves (see Target); Reduce waits for their
	// placed words instead of arrivals, in one chunk.
	Placed bool
	// EarlyRows, with overlap, splits the copy to the step's first peer:
	// its first EarlyRows rows go as soon as the producer raises their
	// early signal (EarlySignal), the rest after the block's own signal.
	// The copy engine then starts a part of a block sooner. 0: no split.
	EarlyRows int
	// Trace, when set, is called on the copy stream of each node peer's
	// rows as the scatter passes a point (so the caller can record an event
	// there): Ready after the wait for the peer's ready flag (first step
	// only), Early after the copy of the early rows (the first peer, with
	// EarlyRows), Signal after the wait for the GEMM signal (with overlap),
	// Permit after the wait for the peer's permit (with overlap, every
	// peer but the first), Landed after the peer's last copy, its
	// arrival signal and (with overlap) the permit it gives.
	Trace func(s device.Stream, peer int, at TracePoint) error
}

// TracePoint is a point of a peer's scatter that Step.Trace reports.
type TracePoint int

// The trace points, in the order a peer's scatter passes them.
const (
	Ready TracePoint = iota
	Early
	Signal
	Permit
	Landed
)

// NumTracePoints is the number of trace points.
const NumTracePoints = int(Landed) + 1

func (st *Stage) lws() int { return st.place.Shape.LocalSize }

func (st *Stage) rowBytes() int64 { return int64(st.n) * int64(st.dt.Size()) }

// chunkRows returns the row range [r0, r1) of chunk c of a block of rows rows.
func chunkRows(rows, chunks, c int) (int, int) {
	per := (rows + chunks - 1) / chunks
	r0 := min(c*per, rows)
	return r0, min(r0+per, rows)
}

// Announce enqueues on s this rank's ready flag (epoch) into every node
// peer's pad: this rank has finished reading its buffers of earlier calls.
// s must be ordered after this rank's previous call.
func (st *Stage) Announce(s device.Stream, epoch uint32) error {
	me := st.place.LocalRank
	for lr := 0; lr < st.lws(); lr++ {
		addr := st.buf.Heap.Word(st.place.NodePeer(lr), st.buf.Ready, me)
		if err := st.dev.WriteValue32(s, addr, epoch); err != nil {
			return fmt.Errorf("intranode: announcing readiness to local rank %d: %w", lr, err)
		}
	}
	return nil
}

// Scatter enqueues the copies of one node step on the copy streams: each
// peer's rows, chunk by chunk, each chunk followed by its arrival signal. The
// first copy to a peer in a call waits for the peer's ready flag; with GEMM
// overlap it also waits for the GEMM signal of the destination rank (and,
// with step.EarlyRows, the first peer's early rows go ahead after their
// early signal). It returns the arrival sequence numbers of the step's
// chunks.
func (st *Stage) Scatter(copies []device.Stream, step Step, first bool) ([]uint32, error) {
	lws, me := st.lws(), st.place.LocalRank
	seqs := make([]uint32, step.Chunks)
	for c := range seqs {
		st.seq++
		seqs[c] = st.seq
	}
	rowBytes := st.rowBytes()
	rowsPerNode := step.RowsPer * lws
	order := RankSwizzle(me, lws)

	// copyRows enqueues on s the copy of rows [r0, r1) of peer's block.
	copyRows := func(s device.Stream, peer, r0, r1 int) error {
		if r1 <= r0 {
			return nil
		}
		destRank := step.Node*lws + peer
		src := step.Input.Add(int64(destRank*step.RowsPer+r0) * rowBytes)
		peerHeap := st.buf.Heap.At(st.place.NodePeer(peer), st.buf.ScatterBuf)
		dst := peerHeap.Add(int64(step.Node*rowsPerNode+me*step.RowsPer+r0) * rowBytes)
		if err := st.dev.Copy(s, dst, src, int64(r1-r0)*rowBytes); err != nil {
			return fmt.Errorf("intranode: scatter to local rank %d: %w", peer, err)
		}
		return nil
	}
	// copyChunk copies chunk c of peer's block from row from on (the rows
	// before it went ahead) and signals its arrival.
	copyChunk := func(s device.Stream, peer, c, from int) error {
		if peer == me {
			return nil // the reduce reads the own block from the input
		}
		r0, r1 := chunkRows(step.RowsPer, step.Chunks, c)
		if err := copyRows(s, peer, max(r0, from), r1); err != nil {
			return err
		}
		arrived := st.buf.Heap.Word(st.place.NodePeer(peer), st.buf.Arrived, me)
		return st.dev.WriteValue32(s, arrived, seqs[c])
	}
	trace := func(s device.Stream, peer int, at TracePoint) error {
		if step.Trace == nil || peer == me {
			return nil
		}
		return step.Trace(s, peer, at)
	}
	// early copies the first step.EarlyRows rows of peer's block once the
	// producer raised their early signal.
	early := func(s device.Stream, peer int) error {
		if err := st.waitGemm(s, step, peer, true); err != nil {
			return err
		}
		if err := copyRows(s, peer, 0, min(step.EarlyRows, step.RowsPer)); err != nil {
			return err
		}
		return trace(s, peer, Early)
	}
	// gate makes s wait until peer's rows may go: its ready flag (first
	// step), the early part sent ahead (split), the GEMM signal (overlap).
	gate := func(s device.Stream, peer int, split bool) error {
		if peer == me {
			return nil // nothing is copied to self; Reduce waits for the own GEMM signal
		}
		if first {
			w := device.Word{
				Addr:  st.buf.Heap.Word(st.place.Rank, st.buf.Ready, peer),
				Label: fmt.Sprintf("ready flag of rank %d (node %d, local rank %d)", st.place.NodePeer(peer), st.place.Node, peer),
			}
			if err := st.dev.WaitValue32(s, w, device.GEQ, step.Epoch); err != nil {
				return err
			}
			if err := trace(s, peer, Ready); err != nil {
				return err
			}
		}
		if !st.overlap {
			return nil
		}
		if split {
			if err := early(s, peer); err != nil {
				return err
			}
		}
		if err := st.waitGemm(s, step, peer, false); err != nil {
			return err
		}
		return trace(s, peer, Signal)
	}

	if st.overlap {
		// Peer by peer, in the order the producer raises the signals, each
		// peer after the first paced by its permit.
		for i, peer := range order {
			s := copies[i%len(copies)]
			split := i == 0 && step.EarlyRows > 0
			if err := gate(s, peer, split); err != nil {
				return nil, err
			}
			if i > 0 && peer != me {
				next := (me + 1) % lws
				w := device.Word{
					Addr: st.buf.Heap.Word(st.place.Rank, st.buf.Permits, peer),
					Label: fmt.Sprintf("permit from rank %d (node %d, local rank %d) to send rank %d node step %d's rows",
						st.place.NodePeer(next), st.place.Node, next, st.place.NodePeer(peer), step.Node),
				}
				if err := st.dev.WaitValue32(s, w, device.GEQ, seqs[len(seqs)-1]); err != nil {
					return nil, err
				}
				if err := trace(s, peer, Permit); err != nil {
					return nil, err
				}
			}
			from := 0
			if split {
				from = step.EarlyRows
			}
			for c := 0; c < step.Chunks; c++ {
				if err := copyChunk(s, peer, c, from); err != nil {
					return nil, err
				}
			}
			if i < lws-2 { // the rank one place before sends to peer next
				prev := (me - 1 + lws) % lws
				permit := st.buf.Heap.Word(st.place.NodePeer(prev), st.buf.Permits, peer)
				if err := st.dev.WriteValue32(s, permit, seqs[len(seqs)-1]); err != nil {
					return nil, fmt.Errorf("intranode: permit to local rank %d: %w", prev, err)
				}
			}
			if err := trace(s, peer, Landed); err != nil {
				return nil, err
			}
		}
		return seqs, nil
	}
	// Chunk by chunk, so the reduction of a chunk can start while the next is
	// in flight.
	for i, peer := range order {
		if err := gate(copies[i%len(copies)], peer, false); err != nil {
			return nil, err
		}
	}
	for c := 0; c < step.Chunks; c++ {
		for i, peer := range order {
			if err := copyChunk(copies[i%len(copies)], peer, c, 0); err != nil {
				return nil, err
			}
		}
	}
	for i, peer := range order {
		if err := trace(copies[i%len(copies)], peer, Landed); err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// waitGemm makes s wait, with GEMM overlap, until the producer finished the
// rows of step.Node's local rank peer (early: their first step.EarlyRows).
func (st *Stage) waitGemm(s device.Stream, step Step, peer int, early bool) error {
	if !st.overlap {
		return nil
	}
	dest := step.Node*st.lws() + peer
	addr, what := st.GemmSignal(dest), "GEMM signal"
	if early {
		addr, what = st.EarlySignal(dest), "early GEMM signal"
	}
	w := device.Word{Addr: addr, Label: fmt.Sprintf("%s for rank %d on rank %d", what, dest, st.place.Rank)}
	return st.dev.WaitValue32(s, w, device.GEQ, step.Epoch)
}

// Reduce enqueues on r, for each chunk, a wait for the lws-1 peer blocks of
// the chunk (their arrivals, or for a placed step their placed words) and
// the reduce kernel that sums them and the own block (from the input) into
// step.ReduceTo.
func (st *Stage) Reduce(r device.Stream, step Step, seqs []uint32) error {
	lws, lr := st.lws(), st.place.LocalRank
	rowBytes := st.rowBytes()
	rowsPerNode := step.RowsPer * lws
	me := st.place.Rank
	local := st.buf.Heap.Local()
	if err := st.waitGemm(r, step, lr, false); err != nil {
		return err
	}
	if step.Placed {
		// One chunk, waited for by epoch on the placed words.
		seqs, step.Chunks = []uint32{step.Epoch}, 1
	}
	for c, seq := range seqs {
		for src := 0; src < lws; src++ {
			if src == lr {
				continue
			}
			w := st.arrivalWord(src)
			if step.Placed {
				w = device.Word{
					Addr: st.buf.Heap.Word(me, st.buf.Placed, step.Node*lws+src),
					Label: fmt.Sprintf("rank %d's rows for node step %d placed by its producer (node %d, local rank %d)",
						st.place.NodePeer(src), step.Node, st.place.Node, src),
				}
			}
			if err := st.dev.WaitValue32(r, w, device.GEQ, seq); err != nil {
				return err
			}
		}
		r0, r1 := chunkRows(step.RowsPer, step.Chunks, c)
		if r1 == r0 {
			continue
		}
		blocks := kernels.Blocks{
			Src:     local.Add(st.buf.ScatterBuf.Off + int64(step.Node*rowsPerNode+r0)*rowBytes),
			Stride:  int64(step.RowsPer) * int64(st.n),
			N:       lws,
			Count:   int64(r1-r0) * int64(st.n),
			Self:    lr,
			SelfSrc: step.Input.Add(int64((step.Node*lws+lr)*step.RowsPer+r0) * rowBytes),
		}
		dst := step.ReduceTo.Add(int64(r0) * rowBytes)
		if err := kernels.LaunchReduce(st.dev, r, st.dt, step.Grid, dst, blocks); err != nil {
			return fmt.Errorf("intranode: reduce: %w", err)
		}
	}
	return nil
}

// arrivalWord is this rank's arrival word for local rank src's blocks.
func (st *Stage) arrivalWord(src int) device.Word {
	return device.Word{
		Addr:  st.buf.Heap.Word(st.place.Rank, st.buf.Arrived, src),
		Label: fmt.Sprintf("arrival of rank %d's block (node %d, local rank %d)", st.place.NodePeer(src), st.place.Node, src),
	}
}

// Target is where a placed step's producer on this rank puts its rows for
// local rank peer (not this rank) in node step node, for calls of rowsPer
// rows per rank.
type Target struct {
	// Rows is the first of the rowsPer rows (row stride: the columns), in
	// the peer's scatter buffer as mapped here.
	Rows device.Ptr
	// Ready is this rank's ready word for the peer: wait for it to reach
	// the call's epoch before writing Rows (the peer has finished reading
	// its buffer in earlier calls).
	Ready device.Word
	// Placed is the peer's placed word for this rank and node step: write
	// the call's epoch there after Rows are written.
	Placed device.Ptr
}

// Target returns the target of this rank's rows for local rank peer in node
// step node.
func (st *Stage) Target(node, peer, rowsPer int) Target {
	lws, me := st.lws(), st.place.LocalRank
	rank := st.place.NodePeer(peer)
	row := int64(node*lws*rowsPer + me*rowsPer)
	return Target{
		Rows: st.buf.Heap.At(rank, st.buf.ScatterBuf).Add(row * st.rowBytes()),
		Ready: device.Word{
			Addr:  st.buf.Heap.Word(st.place.Rank, st.buf.Ready, peer),
			Label: fmt.Sprintf("ready flag of rank %d (node %d, local rank %d)", rank, st.place.Node, peer),
		},
		Placed: st.buf.Heap.Word(rank, st.buf.Placed, node*lws+me),
	}
}

// ReceiveRows is this rank's scatter buffer: where its node peers place or
// copy their rows, rows × columns elements for calls of rows rows.
func (st *Stage) ReceiveRows() device.Ptr {
	return st.buf.Heap.Local().Add(st.buf.ScatterBuf.Off)
}

// GemmSignal is the address of the GEMM signal word for destination rank
// dest in this rank's pad.
func (st *Stage) GemmSignal(dest int) device.Ptr {
	return st.buf.Heap.Word(st.place.Rank, st.buf.Gemm, dest)
}

// EarlySignal is the address of the early GEMM signal word for destination
// rank dest in this rank's pad: the first Step.EarlyRows rows of its block
// are complete.
func (st *Stage) EarlySignal(dest int) device.Ptr {
	return st.buf.Heap.Word(st.place.Rank, st.buf.Early, dest)
}

// SMGrid is the thread blocks of a push-reduce: push and reduce blocks, each
// no more than there are 16-byte vectors to move per chunk and peer; and the
// order of the pushes: Group chunks to one peer before the next.
type SMGrid struct {
	PushBlocks, ReduceBlocks int
	Group                    int
}

// PushReduce enqueues one node step on s with the SM engine: a single kernel
// that pushes this rank's rows to its node peers and reduces what they
// pushed into step.ReduceTo. Readiness handshakes happen inside the kernel,
// so nothing else is needed on the stream. Every rank must pass the same grid.
func (st *Stage) PushReduce(s device.Stream, step Step, grid SMGrid) error {
	lws := st.lws()
	rowBytes := st.rowBytes()
	count := int64(step.RowsPer) * int64(st.n)
	st.pushed += uint32(grid.PushBlocks)
	p := kernels.PushReduce{
		In:           step.Input.Add(int64(step.Node*lws*step.RowsPer) * rowBytes),
		Out:          step.ReduceTo,
		Peers:        st.buf.Heap.Local().Add(st.buf.PeerTable.Off),
		ScatterOff:   st.buf.ScatterBuf.Off + int64(step.Node*lws*step.RowsPer)*rowBytes,
		CountersOff:  st.buf.Counters.Off,
		ReadyOff:     st.buf.Ready.Off,
		LWS:          lws,
		Rank:         st.place.LocalRank,
		Count:        count,
		Chunks:       max(1, min(step.Chunks, kernels.MaxPushChunks)),
		Group:        max(1, grid.Group),
		PushBlocks:   grid.PushBlocks,
		ReduceBlocks: grid.ReduceBlocks,
		Epoch:        step.Epoch,
		Target:       st.pushed,
	}
	if err := kernels.LaunchPushReduce(st.dev, s, st.dt, p); err != nil {
		return fmt.Errorf("intranode: push-reduce: %w", err)
	}
	return nil
}

// ReleaseWaits enqueues on s (a stream of its own, not one that is stuck)
// the writes of values past every target into this rank's own ready,
// arrival, counter, GEMM-signal (early ones too) and placed words, so that every wait on them (stream
// wait-values, the push-reduce kernel's spins) ends.
// It is the way out when a peer is gone and work is stuck waiting for it:
// the results are garbage, and the stage must not be used again.
func (st *Stage) ReleaseWaits(s device.Stream, epoch uint32) error {
	const ahead = 1 << 30 // satisfies a cyclic >= for any target up to 2^30 behind
	for _, w := range []struct {
		pad symm.Pad
		v   uint32
	}{
		{st.buf.Ready, epoch + ahead},
		{st.buf.Gemm, epoch + ahead},
		{st.buf.Early, epoch + ahead},
		{st.buf.Placed, epoch + ahead},
		{st.buf.Arrived, st.seq + ahead},
		{st.buf.Permits, st.seq + ahead},
		{st.buf.Counters, st.pushed + ahead},
	} {
		if err := st.dev.Memset32(s, st.buf.Heap.Word(st.place.Rank, w.pad, 0), w.v, int64(w.pad.Words)); err != nil {
			return fmt.Errorf("intranode: releasing the waits on %s: %w", w.pad.Name, err)
		}
	}
	return nil
}
