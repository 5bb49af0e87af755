package benchmarks

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/dtype"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/world"
)

// Reference is NCCL's flat reduce-scatter over the same ranks, run on the
// same buffers in the same process: the yardstick for correctness and speed.
type Reference struct {
	comm    *nccl.Comm
	Version string
}

// NewReference sets up NCCL on every rank (collective). It returns nil and
// the reason when NCCL cannot run here (the CPU backend, no libnccl): every
// rank agrees, so either all ranks compare or none do.
func NewReference(ctx context.Context, r world.Rank) (*Reference, string, error) {
	var id [nccl.UniqueIDSize]byte
	var lib *nccl.Lib
	reason := ""
	if info := r.Dev.Info(); info.Backend != "cuda" {
		reason = "NCCL needs the CUDA backend (this is " + info.Backend + ")"
	} else if l, err := nccl.Load(); err != nil {
		reason = err.Error()
	} else {
		lib = l
		if r.Comm.Rank() == 0 {
			if id, err = lib.UniqueID(); err != nil {
				reason = err.Error()
			}
		}
	}
	blob := append([]byte{0}, id[:]...)
	if reason == "" {
		blob[0] = 1
	}
	all, err := r.Comm.AllGather(ctx, blob)
	if err != nil {
		return nil, "", err
	}
	for q, b := range all {
		if len(b) != 1+len(id) || b[0] != 1 {
			if reason == "" {
				reason = fmt.Sprintf("NCCL is not available on rank %d", q)
			}
			return nil, reason, nil
		}
	}
	copy(id[:], all[0][1:])
	comm, initErr := lib.InitRank(r.Comm.Size(), id, r.Comm.Rank(), r.Dev.Info().Ordinal)
	// NCCL refuses some worlds (two ranks on one GPU): agree, and go on
	// without it rather than fail the job.
	status := []byte{1}
	if initErr != nil {
		status = []byte("NCCL init on rank " + fmt.Sprint(r.Comm.Rank()) + ": " + initErr.Error())
	}
	all, err = r.Comm.AllGather(ctx, status)
	if err != nil {
		return nil, "", errors.Join(err, destroy(comm))
	}
	for _, st := range all {
		if len(st) != 1 {
			return nil, string(st), destroy(comm)
		}
	}
	ref := &Reference{comm: comm}
	if v, err := lib.Version(); err == nil {
		major, minor, patch := nccl.DecodeVersion(v)
		ref.Version = fmt.Sprintf("%d.%d.%d", major, minor, patch)
	}
	return ref, "", nil
}

func destroy(c *nccl.Comm) error {
	if c == nil {
		return nil
	}
	return c.Destroy()
}

// ReduceScatter enqueues NCCL's reduce-scatter of in ([world*recvCount]) into
// out ([recvCount]) on s.
func (r *Reference) ReduceScatter(in, out device.Ptr, recvCount int64, dt dtype.DType, s device.Stream) error {
	return r.comm.ReduceScatter(nccl.Ptr(in), nccl.Ptr(out), recvCount, dt, s.Handle())
}

// Close destroys the NCCL communicator.
func (r *Reference) Close() error {
	if r == nil || r.comm == nil {
		return nil
	}
	err := r.comm.Destroy()
	r.comm = nil
	return errors.Join(err)
}
