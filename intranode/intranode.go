// Package intranode is the first dimension of ReduceScatter2D: the reduce-
// scatter among the GPUs of one node, for the rows destined to one node (a
// node step).
//
// Three engines move the rows. The copy engine (Scatter, then Reduce; file
// scatter.go) uses no SMs, which suits overlap with a GEMM that holds them:
// every rank copies its rows for each node peer into that peer's scatter
// buffer in rank-swizzle order (peer = (localRank+i+1) % lws, so at any
// moment each GPU sends to one peer and receives from one), raising the
// peer's arrival word after each copy; the reduction stream waits for the
// lws-1 arrivals and sums them with the own block, read straight from the
// input, on a bounded number of SMs. The SM engine (PushReduce; file
// pushreduce.go) does a whole node step in one kernel: push blocks store the
// rows into the peers' scatter buffers and count arrivals with release
// atomics, reduce blocks wait on the counts; on NVLink with traffic both ways
// SM stores keep a higher rate than the copy engine, and one launch per step
// is the least latency there is. The ring (Ring; file ring.go) is the node
// step in bounded memory: chunks travel the ring of the node's ranks through
// a few FIFO slots per peer, each rank adding its rows on the way, so that
// no buffer grows with M.
// The NVLS engine (file nvls.go) binds each
// rank's buffer to the node's NVLink multicast object and reads each block
// summed by the NVSwitch (multimem.ld_reduce); it runs only when named and
// let through device.AllowMulticast's gate (DESIGN.md's safety rule), and is
// verified on the CPU backend's simulated multicast objects.
//
// Signal words (symm.SignalPad), all in the pad of the rank that waits on
// them, carrying values under the context's symm.Protocol (growing with
// every call, or the same every call and reset by their owner after the
// call's last wait on them):
//   - ready[src]   = epoch: src has finished the previous call and may receive.
//   - arrived[src] = seq: src's block of the (step, chunk) numbered seq landed.
//   - gemm[dest, j] = epoch: a GEMM producer finished segment j of the rows
//     for rank dest (with GEMM overlap; Buffers.Segments segments per
//     destination, one by default; early[dest] for the first part of them).
//   - permit[dest] = seq (in the sender's pad): dest has received the block
//     of the rank that sends to it one step earlier (pacing, scatter.go).
//
// The SM engine's arrival counters live in a pad of their own, raised by the
// kernel's atomics; the values it waits for come from its call state on the
// device (kernels.PushReduce), so it needs no reset under either protocol.
// The ring's tails and heads (ring.go) count messages and only grow.
package intranode

import (
	"encoding/binary"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/intranode/push"
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
	ScatterBuf symm.Region // MaxM × N elements: one region of M_per_node rows per node step
	Ready      symm.Pad    // lws words, by source local rank
	Arrived    symm.Pad    // lws words, by source local rank
	Gemm       symm.Pad    // world × Segments words, by destination rank, then segment (GEMM overlap)
	Early      symm.Pad    // world words, by destination rank: the first part of its rows (GEMM overlap, Step.EarlyRows)
	Permits    symm.Pad    // lws words, by receiving local rank (pacing, with GEMM overlap)
	Counters   symm.Pad    // SM engine: lws × push.MaxChunks arrival counters
	State      symm.Pad    // SM engine: the kernel's call state (push.CallStateWords)
	PeerTable  symm.Region // SM engine and ring: lws heap base addresses as mapped here
	// Segments is how many GEMM signals each destination's rows come in,
	// set before AddTo (0 means 1): a producer that signals finer than a
	// block lets the copies start sooner. Segment j of a block of rows
	// rows is SegmentRows(rows, Segments, j).
	Segments int
	// The ring (AddRingTo): its shape, credit words and FIFO slots.
	Ring         RingShape
	Tails, Heads symm.Pad
	Fifo         symm.Region
}

// AddTo lays out the stage's regions for a world of place's shape with
// scatter bytes of scatter buffer.
func (b *Buffers) AddTo(l *symm.Layout, place symm.Place, scatter int64) {
	lws, world := place.Shape.LocalSize, place.Shape.World()
	b.Segments = max(1, b.Segments)
	b.Ready = l.AddPad("ready", lws)
	b.Arrived = l.AddPad("arrived", lws)
	b.Gemm = l.AddPad("gemm signals", world*b.Segments)
	b.Early = l.AddPad("early gemm signals", world)
	b.Permits = l.AddPad("permits", lws)
	b.Counters = l.AddPad("arrival counters", lws*push.MaxChunks)
	b.State = l.AddPad("push-reduce call state", push.CallStateWords)
	b.PeerTable = l.Add("peer table", int64(lws)*8)
	b.ScatterBuf = l.Add("scatter", scatter)
}

// Stage is one rank's intra-node reduce-scatter.
type Stage struct {
	dev   device.Device
	place symm.Place
	heap  *symm.Heap
	buf   Buffers
	dt    dtype.DType
	n     int // columns

	ready, arrived, gemm, early, permits symm.SignalPad
	tails, heads                         symm.SignalPad // the ring's credits

	overlap bool
	proto   symm.Protocol
	seq     uint32 // last arrival sequence number used (same on every rank)
	// ringSent is the ring's messages so far per (channel, hop) FIFO: the
	// count of every tail and head word once they all landed.
	ringSent uint32
	trace    *tracer

	mc       *symm.Multicast // NVLS engine: this rank's part of the node's multicast object
	nvlsLast uint32          // NVLS engine: the epoch of the last call (0: none yet)

	// Help (help.go): the rows at the end of the last peer's block that the
	// producer's SMs push for the call of epoch helpEpoch (0: none), and the
	// event that marks their push done.
	helpRows  int
	helpEpoch symm.Epoch
	helped    device.Event
}

// New returns the stage of the rank at place, on heap laid out with buf,
// whose signal words follow proto. The node team must be mapped.
func New(dev device.Device, place symm.Place, heap *symm.Heap, buf Buffers, dt dtype.DType, cols int, overlap bool, proto symm.Protocol) (*Stage, error) {
	if !heap.Mapped(place.NodeTeam()) {
		return nil, fmt.Errorf("intranode: rank %d cannot map every GPU of its node (peer access over NVLink or same host needed): %w",
			place.Rank, device.ErrNotSupported)
	}
	// The SM engine's kernel finds the peers' heaps through a table in device memory.
	table := make([]byte, 0, 8*place.Shape.LocalSize)
	for lr := 0; lr < place.Shape.LocalSize; lr++ {
		base, _ := heap.Peer(place.NodePeer(lr))
		table = binary.LittleEndian.AppendUint64(table, uint64(base))
	}
	if err := dev.CopyToDevice(heap.Local().Add(buf.PeerTable.Off), table); err != nil {
		return nil, fmt.Errorf("intranode: writing the peer table: %w", err)
	}
	st := &Stage{dev: dev, place: place, heap: heap, buf: buf, dt: dt, n: cols, overlap: overlap, proto: proto}
	local := func(lr int) string {
		return fmt.Sprintf("rank %d (node %d, local rank %d)", place.NodePeer(lr), place.Node, lr)
	}
	st.ready = heap.Signals(buf.Ready, proto, func(_, src int) string { return "ready flag of " + local(src) })
	st.arrived = heap.Signals(buf.Arrived, proto, func(_, src int) string { return "arrival of the block of " + local(src) })
	st.gemm = heap.Signals(buf.Gemm, proto, func(owner, i int) string {
		if buf.Segments > 1 {
			return fmt.Sprintf("GEMM signal of segment %d for rank %d on rank %d", i%buf.Segments, i/buf.Segments, owner)
		}
		return fmt.Sprintf("GEMM signal for rank %d on rank %d", i, owner)
	})
	st.early = heap.Signals(buf.Early, proto, func(owner, dest int) string {
		return fmt.Sprintf("early GEMM signal for rank %d on rank %d", dest, owner)
	})
	st.permits = heap.Signals(buf.Permits, proto, func(owner, dest int) string {
		next := (place.LocalRank + 1) % place.Shape.LocalSize
		return fmt.Sprintf("permit from %s to send to rank %d", local(next), place.NodePeer(dest))
	})
	st.ringPads()
	return st, nil
}

// Step is one node step of a call: the rows destined to node Node.
type Step struct {
	Node     int        // the node whose rows are reduced (cur)
	Input    device.Ptr // this rank's input: M × N
	RowsPer  int        // M_per_rank
	Chunks   int        // chunks per block (>= 1)
	Epoch    symm.Epoch // the call's epoch
	ReduceTo device.Ptr // where the node-reduced M_per_rank × N block goes
	Grid     int        // reduce kernel blocks
	Last     bool       // the call's last node step (its waits are the last on their words)
	// EarlyRows, with overlap, splits the copy to the step's first peer:
	// its first EarlyRows rows go as soon as the producer raises their
	// early signal (EarlySignal), the rest after the block's own signal.
	// The copy engine then starts a part of a block sooner. 0: no split.
	EarlyRows int
}

func (st *Stage) lws() int { return st.place.Shape.LocalSize }

func (st *Stage) rowBytes() int64 { return int64(st.n) * int64(st.dt.Size()) }

// chunkRows returns the row range [r0, r1) of chunk c of a block of rows rows.
func chunkRows(rows, chunks, c int) (int, int) {
	per := (rows + chunks - 1) / chunks
	r0 := min(c*per, rows)
	return r0, min(r0+per, rows)
}

// SegmentRows is the row range [r0, r1) of segment j of a block of rows
// rows signalled in segments segments (empty for segments past the rows).
func SegmentRows(rows, segments, j int) (int, int) { return chunkRows(rows, segments, j) }

// Announce enqueues on s this rank's ready flag (epoch) into every node
// peer's pad: this rank has finished reading its buffers of earlier calls.
// s must be ordered after this rank's previous call.
func (st *Stage) Announce(s device.Stream, epoch symm.Epoch) error {
	me := st.place.LocalRank
	for lr := 0; lr < st.lws(); lr++ {
		if err := st.ready.At(st.place.NodePeer(lr), me).Raise(s, uint32(epoch)); err != nil {
			return fmt.Errorf("intranode: announcing readiness to local rank %d: %w", lr, err)
		}
	}
	return nil
}

// ReceiveRows is this rank's scatter buffer: where its node peers copy or
// push their rows, rows × columns elements for calls of rows rows. With the
// NVLS engine it is the buffer bound to the multicast object, where the
// rank's own rows go.
func (st *Stage) ReceiveRows() device.Ptr {
	if st.mc != nil {
		return st.mc.Local
	}
	return st.heap.Local().Add(st.buf.ScatterBuf.Off)
}

// Segments is how many GEMM signals each destination's rows come in.
func (st *Stage) Segments() int { return st.buf.Segments }

// GemmSignal is the GEMM signal word of segment j of the rows for
// destination rank dest in this rank's pad: a producer raises it to the
// call's epoch once those rows are complete.
func (st *Stage) GemmSignal(dest, j int) symm.Signal {
	return st.gemm.At(st.place.Rank, dest*st.buf.Segments+j)
}

// EarlySignal is the early GEMM signal word for destination rank dest in
// this rank's pad: the first Step.EarlyRows rows of its block are complete.
func (st *Stage) EarlySignal(dest int) symm.Signal { return st.early.At(st.place.Rank, dest) }

// ReleaseWaits enqueues on s (a stream of its own, not one that is stuck)
// the writes of values past every target into this rank's own ready,
// arrival, permit, ring-credit and GEMM-signal words (early ones too), and
// of the push-reduce kernel's abort word, so that every wait on them (stream
// wait-values, the kernels' spins) ends. It is the way out when a peer is
// gone and work is stuck waiting for it: the results are garbage, and the
// stage must not be used again.
func (st *Stage) ReleaseWaits(s device.Stream, epoch symm.Epoch) error {
	abort := st.heap.Local().Add(st.buf.State.Off + 4*push.StateAbort)
	if err := st.dev.Memset32(s, abort, 1, 1); err != nil {
		return fmt.Errorf("intranode: aborting the push-reduce kernel's waits: %w", err)
	}
	for _, w := range []struct {
		pad  symm.SignalPad
		last uint32
	}{
		{st.ready, uint32(epoch)},
		{st.gemm, uint32(epoch)},
		{st.early, uint32(epoch)},
		{st.arrived, st.seq},
		{st.permits, st.seq},
		{st.tails, st.ringSent},
		{st.heads, st.ringSent},
	} {
		if w.pad.Words() == 0 {
			continue
		}
		if err := w.pad.Release(s, w.last); err != nil {
			return fmt.Errorf("intranode: %w", err)
		}
	}
	return nil
}
