package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/seed12530e24/hiercoll/device"
	"github.com/seed12530e24/hiercoll/device/cuda"
	"github.com/seed12530e24/hiercoll/native/nccl"
	"github.com/seed12530e24/hiercoll/native/nvshmem"
	"github.com/seed12530e24/hiercoll/topo"
)

func runDoctor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	out := cmdOut
	multicastEnv := multicastEnvReport(os.LookupEnv) // before the loaders set them
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
	fmt.Fprint(out, multicastEnv)
	return nil
}

// multicastEnvReport says how the variables that keep NVLink multicast off
// were set in the environment hiercoll was started with, and what the
// library does where one is unset.
func multicastEnvReport(lookup func(string) (string, bool)) string {
	var b strings.Builder
	for _, v := range []struct{ name, unset string }{
		{"NCCL_NVLS_ENABLE", "hiercoll's NCCL loader sets it to 0 in its own process"},
		{"NVSHMEM_DISABLE_NVLS", "hiercoll's NVSHMEM loader sets it to 1 in its own process"},
		{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "hiercoll launch sets it to 1 for the processes it starts"},
		{device.AllowMulticastEnv, "the NVLS engine stays off"},
	} {
		if value, ok := lookup(v.name); ok {
			fmt.Fprintf(&b, "%s=%q (in the environment)\n", v.name, value)
		} else {
			fmt.Fprintf(&b, "%s not set in the environment (%s)\n", v.name, v.unset)
		}
	}
	return b.String()
}
