package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// EnvDevice overrides the GPU a process rank uses (default LOCAL_RANK).
const EnvDevice = "HIERCOLL_DEVICE"

// Process joins the multi-process job described by the torchrun variables
// and returns a world with this process's one rank on its GPU: HIERCOLL_DEVICE
// if set (the launcher sets it to the rank's GPU on this host), else
// LOCAL_RANK. When there are fewer GPUs than the ordinal asks for, ranks share
// GPUs round-robin (useful to test several ranks on a one-GPU machine; slow).
func Process(ctx context.Context) (*World, error) {
	comm, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return nil, err
	}
	return Join(comm)
}

// Join is Process for a rank that has joined its job another way (through
// a store, bootstrap.DialStore): the world of comm's rank on its GPU. It
// takes comm over, closing it if it fails.
func Join(comm bootstrap.Comm) (*World, error) {
	dev, err := openRankGPU(comm)
	if err != nil {
		return nil, errors.Join(err, comm.Close())
	}
	shape, err := bootstrap.ShapeOf(comm)
	if err != nil {
		return nil, errors.Join(err, comm.Close(), dev.Close())
	}
	return &World{Shape: shape, Ranks: []Rank{{Comm: comm, Dev: dev}}}, nil
}

func openRankGPU(comm bootstrap.Comm) (device.Device, error) {
	ordinal := comm.LocalRank()
	if v := os.Getenv(EnvDevice); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("world: %s=%s is not a GPU ordinal: %w", EnvDevice, hcerr.Quote(v), device.ErrInvalidArgument)
		}
		ordinal = n
	}
	count, err := cuda.Count()
	if err != nil {
		return nil, fmt.Errorf("world: rank %d needs a GPU: %w", comm.Rank(), err)
	}
	if count == 0 {
		return nil, fmt.Errorf("world: rank %d needs a GPU and the driver sees none: %w", comm.Rank(), device.ErrNotSupported)
	}
	dev, err := cuda.Open(ordinal%count, cuda.Options{})
	if err != nil {
		return nil, fmt.Errorf("world: rank %d: %w", comm.Rank(), err)
	}
	return dev, nil
}

// GPUs returns how many GPUs the CUDA driver sees here (0 without a driver).
func GPUs() int {
	n, err := cuda.Count()
	if err != nil {
		return 0
	}
	return n
}
