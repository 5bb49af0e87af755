// Package world builds the ranks a process runs: each a bootstrap.Comm and a
// device.Device. Sim makes an in-process world of goroutine ranks on
// simulated GPUs (tests, the CPU demo); a multi-process job (one process per
// GPU, under torchrun or `hiercoll launch`) has one rank per process.
package world

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/seed12530e24/hiercoll/bootstrap"
	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/sim"
)

// Rank is one rank of a job as this process sees it.
type Rank struct {
	Comm bootstrap.Comm
	Dev  device.Device
}

// World is the ranks this process runs.
type World struct {
	Shape bootstrap.Shape
	Ranks []Rank
}

// SimOptions configure a simulated world.
type SimOptions struct {
	// HostPerNode puts each node on its own simulated host, so ranks of
	// different nodes cannot map each other's memory (as on real separate
	// machines). By default all nodes share one host (emulated nodes).
	HostPerNode bool
	Device      sim.Options
}

// Sim returns an in-process world of shape.Nodes × shape.LocalSize
// simulated GPUs.
func Sim(shape bootstrap.Shape, opts SimOptions) (*World, error) {
	comms, err := bootstrap.Local(shape)
	if err != nil {
		return nil, err
	}
	w := &World{Shape: shape}
	var host *sim.Host
	for r, c := range comms {
		node := r / shape.LocalSize
		if host == nil || (opts.HostPerNode && r%shape.LocalSize == 0) {
			host = sim.NewHost(fmt.Sprintf("simhost%d", node))
		}
		w.Ranks = append(w.Ranks, Rank{Comm: c, Dev: sim.New(host, r, opts.Device)})
	}
	return w, nil
}

// Run calls fn once per rank, concurrently, and returns the errors of every
// rank that failed (a *RankErrors, by global rank), or nil.
func (w *World) Run(ctx context.Context, fn func(ctx context.Context, r Rank) error) error {
	var g errgroup.Group
	errs := make([]error, len(w.Ranks))
	for i, r := range w.Ranks {
		g.Go(func() error {
			errs[i] = fn(ctx, r)
			return nil
		})
	}
	_ = g.Wait()
	var failed RankErrors
	for i, err := range errs {
		if err != nil {
			failed.Ranks = append(failed.Ranks, w.Ranks[i].Comm.Rank())
			failed.Errs = append(failed.Errs, err)
		}
	}
	if len(failed.Errs) == 0 {
		return nil
	}
	return &failed
}

// Close closes every rank's comm and device.
func (w *World) Close() error {
	var errs []error
	for _, r := range w.Ranks {
		errs = append(errs, r.Comm.Close(), r.Dev.Close())
	}
	return errors.Join(errs...)
}
