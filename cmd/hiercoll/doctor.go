package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/native/nvshmem"
	"github.com/seed12530e24/hiercoll/topo"
)

func runDoctor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	out := os.Stdout
	fmt.Fprintln(out, "hiercoll doctor")
	rep, err := cuda.Probe()
	if err != nil {
		fmt.Fprintf(out, "CUDA: not usable: %v\n  (the CPU backend still runs: hiercoll demo --backend sim)\n", err)
	} else {
		fmt.Fprint(out, rep.String())
	}
	if t, err := topo.Probe(); err != nil {
		fmt.Fprintf(out, "NVML: %v\n", err)
	} else {
		fmt.Fprint(out, t.Table())
		if len(t.GPUs) > 1 {
			all := make([]int, len(t.GPUs))
			for i := range all {
				all[i] = i
			}
			if err := t.CheckPeerAccess(all); err != nil {
				fmt.Fprintf(out, "peer access: %v\n", err)
			} else {
				fmt.Fprintln(out, "peer access: every pair of GPUs can reach each other (copy-engine scatter possible)")
			}
		}
	}
	if lib, err := nccl.Load(); err != nil {
		fmt.Fprintf(out, "NCCL: %v\n", err)
	} else if v, err := lib.Version(); err == nil {
		a, b, c := nccl.DecodeVersion(v)
		fmt.Fprintf(out, "NCCL: %d.%d.%d (%s)\n", a, b, c, lib.Path())
	}
	if lib, err := nvshmem.Load(); err != nil {
		fmt.Fprintf(out, "NVSHMEM: %v\n", err)
	} else {
		fmt.Fprintf(out, "NVSHMEM: host library %s\n", lib.Path())
	}
	for _, v := range []string{"NCCL_NVLS_ENABLE", "NVSHMEM_DISABLE_NVLS", "TORCH_SYMM_MEM_DISABLE_MULTICAST", device.AllowMulticastEnv} {
		fmt.Fprintf(out, "%s=%q\n", v, os.Getenv(v))
	}
	return nil
}
