// Package model predicts the time of one ReduceScatter2D call, and of NCCL's
// ring (and PAT, where it applies) for the same reduce-scatter, on
// nodes × GPUs-per-node GPUs, from latency and bandwidth terms: a plan for
// jobs past one host, where nothing here can be measured.
//
// ReduceScatter2D on rank (node, local rank), input S bytes per rank, world
// W = nodes × GPUs, one output block b = S/W:
//
//	node step   (Nodes of them, in a row on one stream): an intra-node
//	            reduce-scatter of S/Nodes per rank; each GPU pushes (GPUs−1)·b
//	            over NVLink to its node peers and reduces what they push:
//	            tNode = Node.Lat + (GPUs−1)·Node.PeerLat + (GPUs−1)·b / push
//	            with push = Node.PushBW to one peer (GPUs = 2) or
//	            Node.PushAllBW to all peers at once (GPUs > 2); with one GPU
//	            per node, Node.Lat + b / Node.LocalBW (a local copy).
//	rail message (after every node step but the last, the own node's):
//	            the reduced block goes to the same local rank on node cur:
//	            tRail = Rail.Lat + b / rail, rail = NIC bandwidth per GPU
//	            (Rail.NICBW × NICs/GPUs: every GPU of a node sends to its rail
//	            peer at once, each on its own NIC when NICs ≥ GPUs), at most
//	            Lanes × LaneBW where a lane (one NCCL communicator) is capped.
//	overlap     the rail message of step k runs beside node step k+1 (another
//	            stream, another link); messages go one after another. Where
//	            the rail shares the GPUs' NVLink with the node stage (rail
//	            peers on the same host), nothing overlaps: the stages add.
//	final       once every block has landed, one kernel sums Nodes blocks of
//	            b into the output: Final.Lat + (Nodes+1)·b / Final.BW (bytes
//	            read and written).
//
// NCCL's ring passes every GPU of a node before it crosses to the next node,
// in W−1 steps of S/W per rank. Its time is NCCL's own cost model (the form
// and the latency constants of NCCL's tuner, src/graph/tuning.cc): for each
// protocol (LL, LL128, Simple)
//
//	lat = base + (W−Nodes)·hopNVLink + (Nodes−1)·hopNet
//	t   = lat + S·(W−1)/W / (factor × bw)
//
// and NCCL picks the protocol with the least t. The bandwidth bw is ours: the
// NVLink ceiling of a ring inside a node (Ring.NVLinkBW), and across nodes
// also what the NICs the ring's channels cross on carry (Ring.NICs ×
// Rail.NICBW; NCCL spreads its channels over the node's NICs, so by default
// all of them). PAT (NCCL 2.23+, one GPU per node only) takes log2(Nodes)
// network steps plus a per-rank term, at 0.75 of the bandwidth.
//
// Bus bandwidth is nccl-tests' for reduce-scatter: S / t × (W−1)/W.
//
// Defaults: the NVLink terms are this project's measured floors on 4× H200
// (`hiercoll floors`, benchmarks/RESULTS.md), the node step's latency is
// what the measured 1×2 and 1×4 runs at 1 MiB leave after their bandwidth
// term, the network is 8 × 400 Gb/s NICs per node at 98% of line rate, and a
// rail message costs NCCL's network hop latency. ParseFloors reads a floors
// log to replace the intra-node terms; Validate compares the model with the
// emulated multi-node runs recorded under benchmarks/results and with
// NCCL's published scaling (issue 1229).
package model
