package kernels

import (
	_ "embed"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
)

//go:embed cuda/bulk.cu
var bulkSource string

// bulkModule is the bulk copy's CUDA source: the TMA's bulk copies, so
// Hopper (sm_90) only.
var bulkModule = &device.Module{Name: "hiercoll_bulk", Source: PeerSource + bulkSource, Arch: "sm_90a"}

// The bulk copy's pieces and the shared memory they pass through, as
// bulk.cu has them.
const (
	bulkPiece  = 32 << 10
	bulkStages = 6
)

var bulkKernel = &device.Kernel{Module: bulkModule, Name: "hc_bulk_copy", Block: 32,
	Shared: bulkStages*bulkPiece + 128 + 8*bulkStages, Host: bulkHost}

// LaunchBulkCopy enqueues on s a copy of n bytes from src to dst by the
// TMA's bulk copies on grid thread blocks (one per SM: each takes most of
// an SM's shared memory): what SMs move between GPUs when the TMA does the
// moving, for hiercoll floors. n and both addresses must be multiples of
// 16.
func LaunchBulkCopy(dev device.Device, s device.Stream, grid int, dst, src device.Ptr, n int64) error {
	if (n|int64(dst)|int64(src))%16 != 0 || n < 0 {
		return fmt.Errorf("kernels: bulk copy of %d bytes from %v to %v: sizes and addresses must be multiples of 16: %w", n, src, dst, device.ErrInvalidArgument)
	}
	if n == 0 {
		return nil
	}
	grid = max(1, min(grid, int((n+bulkPiece-1)/bulkPiece)))
	return dev.Launch(s, bulkKernel, grid, dst, src, n)
}

// PrepareBulkCopy loads the bulk copy on dev: ErrNotSupported on GPUs
// other than Hopper.
func PrepareBulkCopy(dev device.Device) error { return dev.Prepare(bulkKernel) }

// bulkHost is the bulk copy's Go twin.
func bulkHost(mem device.HostMemory, _ int, args []any) error {
	bad := fmt.Errorf("bulk copy arguments %v: %w", args, device.ErrInvalidArgument)
	if len(args) != 3 {
		return bad
	}
	dst, ok1 := args[0].(device.Ptr)
	src, ok2 := args[1].(device.Ptr)
	n, ok3 := args[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return bad
	}
	from, err := mem.Bytes(src, n)
	if err != nil {
		return fmt.Errorf("bulk copy source: %w", err)
	}
	to, err := mem.Bytes(dst, n)
	if err != nil {
		return fmt.Errorf("bulk copy destination: %w", err)
	}
	copy(to, from)
	return nil
}
