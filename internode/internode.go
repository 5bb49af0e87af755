// Package internode is the second dimension of ReduceScatter2D: the rail
// stage. After a node step has reduced the rows destined to node `to`, the
// rank sends that M_per_rank × N block to the rank with its own local rank on
// node `to` (its rail peer), which collects one block per node and sums them.
//
// A Transport owns the receive buffers (two sets, by call parity, so a rail
// peer that is a call ahead never overwrites a block still being reduced) and
// moves blocks between rail peers:
//   - IPC: a copy-engine put into the rail peer's mapped buffer plus a remote
//     arrival write, for rail peers on the same host (emulated nodes), on the
//     CUDA and CPU backends alike.
//   - NCCL / NVSHMEM: network transports, loaded at run time (see their files).
//
// The send at node step n goes to node (node+n+1) % nnodes; by symmetry the
// block that arrives at that step comes from node (node-n-1) % nnodes.
package internode

import (
	"context"
	"fmt"
	"strings"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
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
	return Auto, fmt.Errorf("internode: unknown transport %q (want auto, ipc, nccl or nvshmem): %w", s, device.ErrInvalidArgument)
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
	Close() error
}

// Endpoint is what a transport is built from.
type Endpoint struct {
	Dev        device.Device
	Comm       bootstrap.Comm
	Place      symm.Place
	BlockBytes int64 // the largest block: MaxM/world rows × N × element size
}

// New builds a transport of kind k (collective over the whole job).
func New(ctx context.Context, k Kind, ep Endpoint) (Transport, error) {
	switch k {
	case Auto, IPC:
		t, err := newIPC(ctx, ep)
		if err == nil || k == IPC {
			return t, err
		}
		return nil, fmt.Errorf("internode: no transport for rank %d: same-host IPC: %v; NCCL and NVSHMEM: %w", ep.Place.Rank, err, device.ErrNotSupported)
	}
	return nil, fmt.Errorf("internode: transport %v: %w", k, device.ErrNotSupported)
}

// Parity is the receive-buffer set call epoch uses.
func Parity(epoch uint32) int { return int(epoch & 1) }
