package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Params are the terms of the model: bandwidths in bytes per second,
// latencies in seconds.
type Params struct {
	Nodes int // nnodes
	GPUs  int // GPUs per node (local_world_size)

	Node  NodeTerms
	Rail  RailTerms
	Final FinalTerms
	Ring  RingTerms
}

// NodeTerms price one node step: an intra-node reduce-scatter of S/Nodes per
// rank by the push-reduce kernel.
type NodeTerms struct {
	PushBW    float64 // bytes a GPU stores per second into one peer (the step's pattern on 2 GPUs)
	PushAllBW float64 // bytes a GPU stores per second into all its peers at once (on 3 or more GPUs)
	LocalBW   float64 // one GPU per node: the step copies its block locally at this rate
	Lat       float64 // fixed cost of a step: launch, the ready handshake, the reduce's tail
	PeerLat   float64 // added per peer: its arrivals and flags
}

// RailTerms price the rail stage: one message per node step (but the own
// node's) to the rail peer, every GPU of a node sending at once.
type RailTerms struct {
	NICs  int     // per node
	NICBW float64 // per NIC and direction, as carried (not the line rate)
	Lat   float64 // one message: its launch, the transport's handshake, the wire
	// Lanes is how many communicators share each message (the NCCL
	// transport's lanes); it matters only where LaneBW caps a lane.
	Lanes  int
	LaneBW float64 // what one lane carries; 0: no cap per lane
	// SharesNVLink is set where the rail runs over the same NVLink as the
	// node stage (rail peers on one host): then the stages do not overlap.
	SharesNVLink bool
}

// FinalTerms price the reduction that ends a multi-node call.
type FinalTerms struct {
	BW  float64 // bytes read and written per second by the reduce kernel on the final SM budget
	Lat float64 // its launch
}

// RingTerms describe NCCL's ring (and PAT) on the same machine.
type RingTerms struct {
	NVLinkBW float64 // bus bandwidth ceiling of a ring inside a node
	// NICs is how many NICs of a node the ring's channels cross on (0: all
	// of Rail.NICs); NetBW, when set, replaces NICs × Rail.NICBW as what a
	// node boundary carries (for links that are not NICs, as in emulations).
	NICs      int
	NetBW     float64
	Protocols []Protocol
	PAT       PATTerms
}

// Protocol is one of NCCL's protocols as NCCL's tuner prices it.
type Protocol struct {
	Name      string
	BaseLat   float64 // once per call
	HopNVLink float64 // per step inside a node
	HopNet    float64 // per step that crosses to the next node
	// HopNetOneGPU replaces HopNet with one GPU per node (NCCL then prices
	// the crossing as its tree does, having no NVLink steps to hide it).
	HopNetOneGPU float64
	// MinHopMultiNode is the least an intra-node step costs once the ring
	// spans nodes (NCCL's network proxy overhead per step).
	MinHopMultiNode float64
	BWFactor        float64 // of the ring's bandwidth
	// MaxBW caps the protocol's bandwidth: on one node, two nodes, more
	// (0: no cap).
	MaxBW [3]float64
}

// PATTerms are NCCL's PAT algorithm (one GPU per node): logarithmic network
// steps plus a part linear in the ranks.
type PATTerms struct {
	BaseLat    float64
	StepLat    float64 // per log2 step across nodes
	PerRankLat float64
	BWFactor   float64
}

// Defaults are the model's terms for nodes × gpus: the NVLink floors
// measured on 4× H200 (benchmarks/RESULTS.md, floors) and 8 × 400 Gb/s NICs
// per node.
func Defaults(nodes, gpus int) Params {
	return Params{
		Nodes: nodes,
		GPUs:  gpus,
		Node: NodeTerms{
			// floors-512MiB.txt: "SM peer write (push) to rank+1, 32 SMs, ring"
			// (the push-reduce kernel stores with 32 SMs by default).
			PushBW: 351.7e9,
			// floors-mixed-512MiB.txt: "SM push to all 3 peers at once,
			// 32 SMs each". Measured on 4 GPUs; taken as the rate to any
			// number of peers (NVSwitch), an assumption for 8.
			PushAllBW: 296.6e9,
			// floors-512MiB.txt: "SM local copy, 32 SMs".
			LocalBW: 1284.3e9,
			// The measured 1×2 and 1×4 calls at 1 MiB (bench-1x2.csv,
			// bench-1x4.csv: 12.91 and 16.60 µs) less their bandwidth
			// terms (1.49 and 2.65 µs) leave 11.42 and 13.95 µs:
			// Lat + 1·PeerLat and Lat + 3·PeerLat.
			Lat:     10.15e-6,
			PeerLat: 1.265e-6,
		},
		Rail: RailTerms{
			NICs: 8,
			// 400 Gb/s at the 392 Gb/s ib_write_bw reaches (NCCL issue 2409).
			NICBW: 49e9,
			// NCCL's network hop latency for its Simple protocol (tuner
			// constants): one send/recv per node step.
			Lat:   14e-6,
			Lanes: 8, // the NCCL transport's default
		},
		Final: FinalTerms{
			// floors-512MiB.txt: "reduce kernel, ..., 132 SMs" (the final
			// reduce runs on every SM) and "reduce kernel, 4 blocks of 64 KiB".
			BW:  4160.9e9,
			Lat: 3.11e-6,
		},
		Ring: RingTerms{
			// floors-512MiB.txt: "SM peer write (push) to rank+1, 132 SMs,
			// ring": the most a ring moves per GPU over NVLink here.
			NVLinkBW:  364.0e9,
			Protocols: NCCLProtocols(),
			PAT:       NCCLPAT(),
		},
	}
}

// NCCLProtocols are NCCL's tuner constants for Hopper GPUs on an x86 Intel
// host (NCCL 2.2x, src/graph/tuning.cc: base and hardware latencies, the
// network overhead per step, LL's bandwidth caps, LL128's 0.92 factor).
func NCCLProtocols() []Protocol {
	const us = 1e-6
	return []Protocol{
		{Name: "LL", BaseLat: 6.6 * us, HopNVLink: 0.6 * us, HopNet: 2.7 * us, HopNetOneGPU: 5.0 * us,
			MinHopMultiNode: 1.0 * us, BWFactor: 0.5, MaxBW: [3]float64{141e9, 39e9, 20.4e9}},
		{Name: "LL128", BaseLat: 14.0 * us, HopNVLink: 1.9 * us, HopNet: 4.0 * us, HopNetOneGPU: 8.5 * us,
			MinHopMultiNode: 1.0 * us, BWFactor: 0.92},
		{Name: "Simple", BaseLat: 8.4 * us, HopNVLink: 3.4 * us, HopNet: 14.0 * us, HopNetOneGPU: 14.0 * us,
			MinHopMultiNode: 3.0 * us, BWFactor: 1},
	}
}

// NCCLPAT is NCCL's tuner pricing of PAT (NCCL 2.23+): base 8 µs, the tree's
// network latency over 3.5 per log2 step, 2.8 µs per rank, 0.75 of the
// bandwidth.
func NCCLPAT() PATTerms {
	return PATTerms{BaseLat: 8.0e-6, StepLat: 14.0e-6 / 3.5, PerRankLat: 2.8e-6, BWFactor: 0.75}
}

// World is Nodes × GPUs.
func (p Params) World() int { return p.Nodes * p.GPUs }

// Check reports the first term that cannot price a call.
func (p Params) Check() error {
	var errs []error
	bad := func(cond bool, format string, args ...any) {
		if cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	bad(p.Nodes < 1, "nodes = %d; want at least 1", p.Nodes)
	bad(p.GPUs < 1, "GPUs per node = %d; want at least 1", p.GPUs)
	bad(p.GPUs == 2 && !(p.Node.PushBW > 0), "node push bandwidth to one peer = %g; want > 0", p.Node.PushBW)
	bad(p.GPUs > 2 && !(p.Node.PushAllBW > 0), "node push bandwidth to all peers = %g; want > 0", p.Node.PushAllBW)
	bad(p.GPUs == 1 && !(p.Node.LocalBW > 0), "local copy bandwidth = %g; want > 0", p.Node.LocalBW)
	bad(p.Node.Lat < 0 || p.Node.PeerLat < 0, "node step latencies %g, %g; want ≥ 0", p.Node.Lat, p.Node.PeerLat)
	if p.Nodes > 1 {
		bad(p.Rail.NICs < 1, "NICs per node = %d; want at least 1", p.Rail.NICs)
		bad(!(p.Rail.NICBW > 0), "NIC bandwidth = %g; want > 0", p.Rail.NICBW)
		bad(p.Rail.Lat < 0, "rail latency = %g; want ≥ 0", p.Rail.Lat)
		bad(p.Rail.LaneBW < 0 || (p.Rail.LaneBW > 0 && p.Rail.Lanes < 1), "lanes = %d of %g B/s each; want at least 1 lane", p.Rail.Lanes, p.Rail.LaneBW)
		bad(!(p.Final.BW > 0) || p.Final.Lat < 0, "final reduce %g B/s, %g s; want a bandwidth > 0", p.Final.BW, p.Final.Lat)
		bad(p.Ring.NICs < 0 || p.Ring.NetBW < 0, "ring NICs %d, network bandwidth %g; want ≥ 0", p.Ring.NICs, p.Ring.NetBW)
	}
	bad(p.World() > 1 && p.GPUs > 1 && !(p.Ring.NVLinkBW > 0), "ring NVLink bandwidth = %g; want > 0", p.Ring.NVLinkBW)
	bad(len(p.Ring.Protocols) == 0, "no ring protocols")
	for _, pr := range p.Ring.Protocols {
		bad(!(pr.BWFactor > 0), "protocol %s: bandwidth factor %g; want > 0", pr.Name, pr.BWFactor)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("model: %w: %w", hcerr.ErrInvalidArgument, err)
	}
	return nil
}

// BusBW is nccl-tests' bus bandwidth of a reduce-scatter of bytes per rank
// over world ranks that took seconds: bytes / seconds × (world−1)/world.
func BusBW(bytes int64, world int, seconds float64) float64 {
	if seconds <= 0 || world < 1 {
		return 0
	}
	return float64(bytes) / seconds * float64(world-1) / float64(world)
}

// RS2DTime is the predicted time of one ReduceScatter2D call, by stage.
type RS2DTime struct {
	Bytes    int64   // input per rank
	Block    float64 // bytes of one output block, Bytes / world
	NodeStep float64 // one node step
	RailMsg  float64 // one rail message (0 on one node)
	Node     float64 // the node steps in a row: Nodes × NodeStep
	Rail     float64 // when the last rail message lands (0 on one node)
	Final    float64 // the final reduce (0 on one node)
	Total    float64
	// Bound names the chain that ends last before the final reduce: "node"
	// or "rail" ("node+rail" where they share NVLink and add up).
	Bound        string
	NodeSteps    int     // Nodes
	RailMessages int     // Nodes − 1, one after another on each GPU
	RailBW       float64 // per GPU
	RailNICs     int     // NICs of a node busy at once in the rail stage
}

// BusBW of the call.
func (t RS2DTime) BusBW(world int) float64 { return BusBW(t.Bytes, world, t.Total) }

// RS2D predicts one ReduceScatter2D call of bytes per rank.
func RS2D(p Params, bytes int64) (RS2DTime, error) {
	if err := p.Check(); err != nil {
		return RS2DTime{}, err
	}
	if bytes <= 0 {
		return RS2DTime{}, fmt.Errorf("model: %w: %d bytes per rank; want > 0", hcerr.ErrInvalidArgument, bytes)
	}
	nn := p.Nodes
	t := RS2DTime{Bytes: bytes, Block: float64(bytes) / float64(p.World()), NodeSteps: nn}
	t.NodeStep = p.nodeStep(t.Block)
	t.Node = float64(nn) * t.NodeStep
	if nn == 1 {
		t.Total, t.Bound = t.Node, "node"
		return t, nil
	}
	t.RailMessages = nn - 1
	t.RailBW, t.RailNICs = p.railBW()
	t.RailMsg = p.Rail.Lat + t.Block/t.RailBW
	if p.Rail.SharesNVLink {
		// One link carries both: the stages add.
		t.Rail = t.Node + float64(nn-1)*t.RailMsg
		t.Bound = "node+rail"
	} else {
		// Message k leaves when node step k has reduced it and message k−1
		// has gone; the own node's step (the last) sends nothing.
		sent := 0.0
		for k := 0; k < nn-1; k++ {
			sent = math.Max(float64(k+1)*t.NodeStep, sent) + t.RailMsg
		}
		t.Rail = sent
		t.Bound = "node"
		if t.Rail > t.Node {
			t.Bound = "rail"
		}
	}
	t.Final = p.Final.Lat + float64(nn+1)*t.Block/p.Final.BW
	t.Total = math.Max(t.Node, t.Rail) + t.Final
	return t, nil
}

// nodeStep is one node step's time for output blocks of block bytes.
func (p Params) nodeStep(block float64) float64 {
	g := p.GPUs
	if g == 1 {
		return p.Node.Lat + block/p.Node.LocalBW
	}
	peers := float64(g - 1)
	bw := p.Node.PushAllBW
	if g == 2 {
		bw = p.Node.PushBW
	}
	return p.Node.Lat + peers*p.Node.PeerLat + peers*block/bw
}

// railBW is what each GPU sends its rail peer per second while every GPU of
// its node does the same (the node's NICs shared evenly among its GPUs), and
// how many NICs that keeps busy: all of them.
func (p Params) railBW() (float64, int) {
	bw := p.Rail.NICBW * float64(p.Rail.NICs) / float64(p.GPUs)
	if p.Rail.LaneBW > 0 {
		bw = math.Min(bw, float64(p.Rail.Lanes)*p.Rail.LaneBW)
	}
	return bw, p.Rail.NICs
}

// RingTime is the predicted time of NCCL's ring (or PAT) reduce-scatter.
type RingTime struct {
	Bytes     int64
	Steps     int     // world − 1 for the ring; log2 steps across nodes for PAT
	StepBytes float64 // bytes each rank sends per ring step: Bytes / world
	Protocol  string  // the protocol NCCL's tuner picks (least time)
	Lat       float64 // the picked protocol's latency term
	BW        float64 // and its bandwidth (bus bandwidth at large sizes)
	Total     float64
	CrossNICs int // NICs of a node the ring crosses on (0 on one node)
}

// BusBW of the call.
func (t RingTime) BusBW(world int) float64 { return BusBW(t.Bytes, world, t.Total) }

// Ring predicts NCCL's ring reduce-scatter of bytes per rank: NCCL's cost
// model with this model's link bandwidths, the fastest protocol.
func Ring(p Params, bytes int64) (RingTime, error) {
	if err := p.Check(); err != nil {
		return RingTime{}, err
	}
	if bytes <= 0 {
		return RingTime{}, fmt.Errorf("model: %w: %d bytes per rank; want > 0", hcerr.ErrInvalidArgument, bytes)
	}
	w, nn := p.World(), p.Nodes
	t := RingTime{Bytes: bytes, Steps: w - 1, StepBytes: float64(bytes) / float64(w)}
	if w == 1 {
		return t, nil
	}
	bw, nics := p.ringBW()
	t.CrossNICs = nics
	volume := float64(bytes) * float64(w-1) / float64(w)
	interSteps, intraSteps := nn-1, w-nn
	for _, pr := range p.Ring.Protocols {
		hop, net := pr.HopNVLink, pr.HopNet
		if nn > 1 {
			hop = math.Max(hop, pr.MinHopMultiNode)
		}
		if p.GPUs == 1 {
			net = pr.HopNetOneGPU
		}
		lat := pr.BaseLat + float64(intraSteps)*hop + float64(interSteps)*net
		pbw := pr.BWFactor * bw
		if cap := pr.MaxBW[min(nn, 3)-1]; cap > 0 {
			pbw = math.Min(pbw, cap)
		}
		total := lat + volume/pbw
		if t.Protocol == "" || total < t.Total {
			t.Protocol, t.Lat, t.BW, t.Total = pr.Name, lat, pbw, total
		}
	}
	return t, nil
}

// ringBW is the ring's bandwidth per GPU: the NVLink ceiling inside a node,
// and across nodes no more than a node boundary carries, with the NICs that
// carry it.
func (p Params) ringBW() (float64, int) {
	bw := math.Inf(1)
	if p.GPUs > 1 {
		bw = p.Ring.NVLinkBW
	}
	if p.Nodes == 1 {
		return bw, 0
	}
	nics := p.Ring.NICs
	if nics <= 0 || nics > p.Rail.NICs {
		nics = p.Rail.NICs
	}
	net := float64(nics) * p.Rail.NICBW
	if p.Ring.NetBW > 0 {
		net = p.Ring.NetBW
	}
	return math.Min(bw, net), nics
}

// PAT predicts NCCL's PAT reduce-scatter. NCCL runs it with one GPU per node
// only; elsewhere the error wraps hcerr.ErrNotSupported.
func PAT(p Params, bytes int64) (RingTime, error) {
	if err := p.Check(); err != nil {
		return RingTime{}, err
	}
	if p.GPUs != 1 || p.Nodes < 2 {
		return RingTime{}, fmt.Errorf("model: PAT on %d node(s) × %d GPU(s): %w (NCCL runs PAT with one GPU per node, on 2 nodes or more)",
			p.Nodes, p.GPUs, hcerr.ErrNotSupported)
	}
	if bytes <= 0 {
		return RingTime{}, fmt.Errorf("model: %w: %d bytes per rank; want > 0", hcerr.ErrInvalidArgument, bytes)
	}
	w := p.World()
	bw, nics := p.ringBW()
	steps := int(math.Ceil(math.Log2(float64(p.Nodes))))
	t := RingTime{Bytes: bytes, Steps: steps, StepBytes: float64(bytes) / float64(w), Protocol: "Simple", CrossNICs: nics}
	t.Lat = p.Ring.PAT.BaseLat + float64(steps)*p.Ring.PAT.StepLat + float64(w)*p.Ring.PAT.PerRankLat
	t.BW = p.Ring.PAT.BWFactor * bw
	t.Total = t.Lat + float64(bytes)*float64(w-1)/float64(w)/t.BW
	return t, nil
}
