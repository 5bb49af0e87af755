package intranode

import (
	"context"
	"fmt"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/intranode/nvls"
	"github.com/seed12530e24/hiercoll/symm"
)

// The NVLS engine: the node's GPUs bind one buffer each to an NVLink
// multicast object (symm.NewMulticast), and each computes its block of a
// node step with one load-reduce per 16 bytes on the object's multicast
// address: the NVSwitch reads the block from every GPU and returns the sum,
// so no rank copies rows to a peer and no SM adds them.
//
// A call's input reaches the bound buffer by a local copy: each rank copies
// its whole input once into its own bound buffer (device memory to device
// memory on the same GPU, at HBM rate, several times NVLink's), the rows of
// destination rank g at g × stride. That is the cheapest route the API
// allows: ld_reduce reads only bound memory, and the caller's input is not
// bound (a GEMM producer could write straight into the bound buffer and
// skip the copy). stride is a block rounded up to the 16-byte vector of a
// load-reduce, so every block starts aligned; when a block is already a
// multiple of 16 bytes the copy is one, else one per block.
//
// Two node barriers on the existing signal words bracket the reads:
//   - before: every rank raises its arrival word (the next seq) in every
//     node peer's pad once its copy is done, and waits for every peer's:
//     all bound buffers hold the call's rows;
//   - after: every rank raises its ready word (the call's epoch) in every
//     peer's pad once its last load-reduce is done, and the next call waits
//     for every peer's before it overwrites its bound buffer (Close's
//     collective barrier covers the last call).

// nvlsStride is the distance between destination blocks in the bound
// buffer for calls of rowsPer rows per rank.
func (st *Stage) nvlsStride(rowsPer int) int64 {
	return (int64(rowsPer)*st.rowBytes() + nvls.Vector - 1) / nvls.Vector * nvls.Vector
}

// SetUpNVLS binds this rank's buffer for calls of up to maxRowsPer rows per
// rank to the node team's multicast object. It is collective over comm
// (every rank calls it), after device.AllowMulticast gave permit.
func (st *Stage) SetUpNVLS(ctx context.Context, comm bootstrap.Comm, permit device.Permit, maxRowsPer int) error {
	size := int64(st.place.Shape.World()) * st.nvlsStride(maxRowsPer)
	m, err := symm.NewMulticast(ctx, comm, st.dev, permit, st.place.NodeTeam(), size)
	if err != nil {
		return fmt.Errorf("intranode: NVLS: %w", err)
	}
	st.mc = m
	return nil
}

// NVLSBegin enqueues on s the start of call epoch with the NVLS engine:
// the wait for every node peer to have finished the previous call's
// load-reduces, the copy of the M × N input into the bound buffer, and the
// barrier after which every bound buffer holds the call's rows.
func (st *Stage) NVLSBegin(s device.Stream, input device.Ptr, rowsPer int, epoch symm.Epoch) error {
	if st.mc == nil {
		return fmt.Errorf("intranode: NVLS call on a stage without a multicast object: %w", device.ErrInvalidArgument)
	}
	me := st.place.LocalRank
	if st.nvlsLast != 0 {
		for q := 0; q < st.lws(); q++ {
			if q != me {
				if err := st.ready.At(st.place.Rank, q).Wait(s, st.nvlsLast); err != nil {
					return err
				}
			}
		}
	}
	if err := st.copyToBound(s, input, rowsPer); err != nil {
		return err
	}
	st.seq++
	for q := 0; q < st.lws(); q++ {
		if q != me {
			if err := st.arrived.At(st.place.NodePeer(q), me).Raise(s, st.seq); err != nil {
				return fmt.Errorf("intranode: NVLS arrival to local rank %d: %w", q, err)
			}
		}
	}
	for q := 0; q < st.lws(); q++ {
		if q != me {
			if err := st.arrived.At(st.place.Rank, q).Wait(s, st.seq); err != nil {
				return err
			}
		}
	}
	st.nvlsLast = uint32(epoch)
	return nil
}

// copyToBound copies the input's world blocks of rowsPer rows into the
// bound buffer at the NVLS stride: in one copy when the stride is the
// block's size.
func (st *Stage) copyToBound(s device.Stream, input device.Ptr, rowsPer int) error {
	block := int64(rowsPer) * st.rowBytes()
	stride := st.nvlsStride(rowsPer)
	world := st.place.Shape.World()
	if stride == block {
		if err := st.dev.Copy(s, st.mc.Local, input, int64(world)*block); err != nil {
			return fmt.Errorf("intranode: NVLS copy into the bound buffer: %w", err)
		}
		return nil
	}
	for g := 0; g < world; g++ {
		if err := st.dev.Copy(s, st.mc.Local.Add(int64(g)*stride), input.Add(int64(g)*block), block); err != nil {
			return fmt.Errorf("intranode: NVLS copy of block %d into the bound buffer: %w", g, err)
		}
	}
	return nil
}

// NVLSReduce enqueues on s node step step's load-reduce: this rank's block
// of the rows destined to node step.Node, summed over the node's GPUs
// through the multicast address, into step.ReduceTo (on step.Grid blocks).
func (st *Stage) NVLSReduce(s device.Stream, step Step) error {
	dest := step.Node*st.lws() + st.place.LocalRank
	mc := st.mc.Addr.Add(int64(dest) * st.nvlsStride(step.RowsPer))
	if err := nvls.LaunchReduce(st.dev, s, st.dt, step.Grid, step.ReduceTo, mc, int64(step.RowsPer)*int64(st.n)); err != nil {
		return fmt.Errorf("intranode: NVLS reduce: %w", err)
	}
	return nil
}

// NVLSEnd enqueues on s, after the call's last load-reduce, this rank's
// ready word (epoch) into every node peer's pad: the peers may overwrite
// their bound buffers.
func (st *Stage) NVLSEnd(s device.Stream, epoch symm.Epoch) error {
	me := st.place.LocalRank
	for q := 0; q < st.lws(); q++ {
		if q != me {
			if err := st.ready.At(st.place.NodePeer(q), me).Raise(s, uint32(epoch)); err != nil {
				return fmt.Errorf("intranode: NVLS end to local rank %d: %w", q, err)
			}
		}
	}
	return nil
}
