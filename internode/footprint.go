package internode

import "github.com/seed12530e24/hiercoll/symm"

// RailBytes is the device memory a Rail of kind k takes on each rank with
// blocks of block bytes over nodes nodes: the staging set it sends from
// (Rail), and its transport's receive sets, signal words and, for NVSHMEM
// across hosts or under EnvNVSHMEMStage, the staging set of its puts. For
// Auto it is the most that any transport Auto may pick takes, since which
// one it picks is known only once every rank has tried. It is what a
// memory bound (rs2d Config.MaxSymmetricBytes) must leave room for; memory
// that a native library reserves for itself (NCCL's channels, NVSHMEM's
// heap beyond this allocation) is not counted.
func RailBytes(k Kind, proto symm.Protocol, nodes int, block int64) int64 {
	staging := int64(nodes) * block
	switch k {
	case IPC:
		l, _, _, _ := ipcLayout(nodes, block)
		return staging + l.Size()
	case NCCL:
		return staging + 2*int64(nodes)*block
	case NVSHMEM:
		return staging + newShmemLayout(nodes, block, true).size
	}
	most := max(RailBytes(IPC, proto, nodes, block), RailBytes(NCCL, proto, nodes, block))
	if proto != symm.Replayable { // NVSHMEM is refused under symm.Replayable
		most = max(most, RailBytes(NVSHMEM, proto, nodes, block))
	}
	return most
}
