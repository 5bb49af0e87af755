// Package internode is the second dimension of ReduceScatter2D: the rail
// stage. After a node step has reduced the rows destined to node `to`, the
// rank sends that M_per_rank × N block to the rank with its own local rank on
// node `to` (its rail peer), which collects one block per node and sums them.
//
// A Rail (rail.go) is one rank's stage: the staging buffer each node step
// reduces into, the Transport that sends the blocks, and the final sum of
// the blocks that arrive (Finish).
//
// A Transport owns the receive buffers (two sets, by call parity, so a rail
// peer that is a call ahead never overwrites a block still being reduced) and
// moves blocks between rail peers:
//   - IPC: a copy-engine put into the rail peer's mapped buffer plus a remote
//     arrival write, for rail peers on the same host (emulated nodes), on the
//     CUDA and CPU backends alike.
//   - NVSHMEM: the same one-sided protocol across hosts: a put-with-signal
//     into the rail peer's symmetric receive buffer, enqueued on the stream;
//     the signal word of each source node carries the epoch. NVSHMEM is one
//     per process: the first transport starts it over the whole job, the last
//     one to close finalises it (nvshmem.go).
//   - NCCL: two-sided: at each node step one NCCL group sends the block to
//     node `to` and receives, into the receive buffer, the block that node
//     RailSource(node, to) sends here at the same step; Lanes communicators
//     per rail carry a share of each block each, on streams of their own
//     (nccl.go).
//
// NCCL and NVSHMEM are loaded at run time and need the CUDA backend; on the
// CPU backend, or where the library is missing, New fails with an error
// wrapping device.ErrNotSupported. Their loaders keep NVLink multicast off
// (NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1). Before NVSHMEM starts, this
// package sets NVSHMEM_SYMMETRIC_SIZE (to fit the transport, in whole GiB,
// at least 1) and, when every rank is on one host,
// NVSHMEM_REMOTE_TRANSPORT=none, each only when unset; EnvNVSHMEMStage makes
// NVSHMEM stage its puts as it does across hosts.
//
// New is collective, and every rank leaves it with the same kind or with an
// error: each candidate is built on every rank and kept only when all ranks
// built it (an all-gather of the outcome), before the next one is tried.
// Auto tries IPC, then NVSHMEM, then NCCL.
//
// The send at node step n goes to node (node+n+1) % nnodes; by symmetry the
// block that arrives at that step comes from node (node-n-1) % nnodes, which
// is (2·node − to) mod nnodes: RailSource.
package internode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/seed12530e24/hiercoll/symm"
)

// Kind selects a transport.
type Kind int

// Transports. Auto picks IPC when every rail peer is on this host, else
// NVSHMEM, else NCCL.
const (
	Auto Kind = iota
	IPC
	NCCL
	NVSHMEM
)

func (k Kind) String() string {
	switch k {
	case Auto:
		return "auto"
	case IPC:
		return "ipc"
	case NCCL:
		return "nccl"
	case NVSHMEM:
		return "nvshmem"
	}
	return fmt.Sprintf("transport(%d)", int(k))
}

// ParseKind accepts the names String prints.
func ParseKind(s string) (Kind, error) {
	for _, k := range []Kind{Auto, IPC, NCCL, NVSHMEM} {
		if strings.EqualFold(s, k.String()) {
			return k, nil
		}
	}
	return Auto, fmt.Errorf("internode: unknown transport %s (want auto, ipc, nccl or nvshmem): %w", hcerr.Quote(s), device.ErrInvalidArgument)
}

// Transport moves node-reduced blocks between rail peers.
type Transport interface {
	Kind() Kind
	// RecvBuf is where the blocks of call epoch land: nnodes blocks of
	// BlockBytes each, block n from node n. The block of this rank's own
	// node is written there by the local reduce.
	RecvBuf(epoch uint32) device.Ptr
	// Send enqueues on s the transfer of n bytes at src to the rail peer on
	// node to, into its receive buffer for this rank's node.
	Send(s device.Stream, to int, src device.Ptr, n int64, epoch uint32) error
	// Wait makes s wait until the blocks of every other node have arrived.
	Wait(s device.Stream, epoch uint32) error
	// Consumed enqueues on s, after the blocks of call epoch were read,
	// what lets their senders send the next call's blocks (the credits of
	// the IPC transport under symm.Replayable; nothing elsewhere).
	Consumed(s device.Stream, epoch uint32) error
	// Close releases the transport once no peer writes into it any more
	// (the caller makes sure of that, with a barrier). It is collective for
	// NVSHMEM, whose free and finalize synchronise every PE, and NCCL, whose
	// communicator teardown synchronises the ranks of a node: every rank
	// closes its transports, and in the same order. Its waits and native
	// calls are bounded by Endpoint.Timeout: NCCL's communicators are
	// aborted when their work does not finish; an NVSHMEM call that does not
	// return is left running and NVSHMEM unused from then on. The error
	// says which.
	Close() error
}

// WaitReleaser is implemented by transports whose waits are on words in this
// rank's memory, which the host can overwrite to end them when a peer is gone
// (see intranode.Engine.ReleaseWaits).
type WaitReleaser interface {
	ReleaseWaits(s device.Stream, epoch uint32) error
}

// Endpoint is what a transport is built from.
type Endpoint struct {
	Dev        device.Device
	Comm       bootstrap.Comm
	Place      symm.Place
	BlockBytes int64 // the largest block: MaxM/world rows × N × element size
	// DType is the element type of the blocks. NCCL counts what it moves in
	// elements of a type, so the NCCL transport needs it (and blocks whose
	// size is a multiple of it); the others move bytes and ignore it.
	DType dtype.DType
	// Lanes is, for NCCL, the communicators per rail that carry each block
	// in parallel (0: DefaultNCCLLanes); the others ignore it.
	Lanes int
	// Protocol is the signal protocol of the calls (symm.Replayable: the
	// same epoch every call, so one receive-buffer set; IPC then adds
	// credits, NCCL relies on stream order, NVSHMEM is refused).
	Protocol symm.Protocol
	// Timeout bounds Close's waits and native calls (NCCL's communicator
	// teardown, NVSHMEM's free and finalize); 0: DefaultCloseTimeout.
	Timeout time.Duration
}

// DefaultCloseTimeout bounds Close when Endpoint.Timeout is 0.
const DefaultCloseTimeout = time.Minute

func (ep Endpoint) closeTimeout() time.Duration {
	if ep.Timeout <= 0 {
		return DefaultCloseTimeout
	}
	return ep.Timeout
}

// New builds a transport of kind k. It is collective over the whole job:
// every rank calls it with the same kind, and either every rank gets a
// transport of the same kind or every rank gets an error. An explicit kind
// gives that transport or the reason it cannot run (wrapping
// device.ErrNotSupported when its library, device or topology is missing);
// Auto tries IPC, NVSHMEM and NCCL in that order and fails, naming each
// reason, only when none of them runs.
func New(ctx context.Context, k Kind, ep Endpoint) (Transport, error) {
	all := []candidate{
		{IPC, func(ctx context.Context) (Transport, error) { return nilIfErr(newIPC(ctx, ep)) }},
		{NVSHMEM, func(ctx context.Context) (Transport, error) { return nilIfErr(newNVSHMEM(ctx, ep)) }},
		{NCCL, func(ctx context.Context) (Transport, error) { return nilIfErr(newNCCL(ctx, ep)) }},
	}
	if ep.Protocol == symm.Replayable {
		// NVSHMEM's signals carry growing epochs: not replayable.
		all[1].build = func(context.Context) (Transport, error) {
			return nil, fmt.Errorf("internode: nvshmem: calls that can be captured in CUDA graphs need the ipc or nccl transport: %w", device.ErrNotSupported)
		}
	}
	if k == Auto {
		return pick(ctx, ep.Comm, all)
	}
	for _, c := range all {
		if c.kind == k {
			return pick(ctx, ep.Comm, []candidate{c})
		}
	}
	return nil, fmt.Errorf("internode: transport %v: %w", k, device.ErrInvalidArgument)
}

// nilIfErr turns a failed constructor's typed nil into an untyped one, so
// that a failed candidate is never mistaken for a transport.
func nilIfErr[T Transport](t T, err error) (Transport, error) {
	if err != nil {
		return nil, err
	}
	return t, nil
}

// candidate is one transport New may build.
type candidate struct {
	kind  Kind
	build func(ctx context.Context) (Transport, error) // collective
}

// pick builds the candidates in order and returns the first one that every
// rank built. After each attempt the ranks all-gather its outcome, so a
// candidate that failed on any rank is closed where it succeeded and every
// rank moves on to the next one together. With one candidate, its error is
// returned as it is; with several, an error naming why each was refused.
func pick(ctx context.Context, comm bootstrap.Comm, cands []candidate) (Transport, error) {
	refused := &noTransportError{rank: comm.Rank()}
	for _, c := range cands {
		t, err := c.build(ctx)
		if _, aerr := bootstrap.Agree(ctx, comm, err, nil); aerr != nil {
			if err == nil {
				// Built here, refused by a peer: close it, say who refused.
				aerr = errors.Join(fmt.Errorf("internode: %v: %w", c.kind, aerr), t.Close())
			}
			if len(cands) == 1 {
				return nil, aerr
			}
			refused.tried = append(refused.tried, c.kind)
			refused.reasons = append(refused.reasons, aerr)
			if ctx.Err() != nil {
				break // the rest could not agree either
			}
			continue
		}
		return t, nil
	}
	return nil, refused
}

// noTransportError is New(Auto) finding no transport: why each candidate
// was refused. It wraps device.ErrNotSupported and every reason.
type noTransportError struct {
	rank    int
	tried   []Kind
	reasons []error
}

func (e *noTransportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "internode: no transport between the rail peers of rank %d", e.rank)
	for i, k := range e.tried {
		reason := strings.TrimPrefix(e.reasons[i].Error(), "internode: ")
		if !strings.HasPrefix(reason, k.String()+": ") {
			reason = k.String() + ": " + reason
		}
		b.WriteString("; " + reason)
	}
	return b.String()
}

func (e *noTransportError) Unwrap() []error {
	return append([]error{device.ErrNotSupported}, e.reasons...)
}

// parity is the receive-buffer set call epoch uses.
func parity(epoch uint32) int { return symm.Epoch(epoch).Parity() }

// RailSource is the node whose block arrives at node while node sends to
// node to: at node step n every node sends to (node+n+1) % nodes, so the
// sender to node is (node-n-1) % nodes = (2·node − to) mod nodes.
func RailSource(node, to, nodes int) int {
	return ((2*node-to)%nodes + nodes) % nodes
}

// checkBlock validates a Send's arguments before anything is enqueued.
func checkBlock(k Kind, ep Endpoint, to int, n int64) error {
	if to < 0 || to >= ep.Place.Shape.Nodes {
		return fmt.Errorf("internode: %v: send to node %d of %d: %w", k, to, ep.Place.Shape.Nodes, device.ErrInvalidArgument)
	}
	if n < 0 || n > ep.BlockBytes {
		return fmt.Errorf("internode: %v: block of %d bytes (at most %d): %w", k, n, ep.BlockBytes, device.ErrInvalidArgument)
	}
	return nil
}

// needCUDA refuses backends a native library cannot drive (the caller
// names the transport).
func needCUDA(dev device.Device) error {
	if b := dev.Info().Backend; b != "cuda" {
		return fmt.Errorf("needs the CUDA backend (%s is on the %s backend): %w", dev.Name(), b, device.ErrNotSupported)
	}
	return nil
}
