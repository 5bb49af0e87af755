package main

import (
	"context"
	"encoding/json"
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
	jsonOut := fs.Bool("json", false, "print each check as a JSON object on stdout, one per line: check, ok, detail")
	if err := parseFlags(fs, args, false); err != nil {
		return err
	}
	multicastEnv := multicastEnvReport(os.LookupEnv) // before the loaders set them
	checks := doctorChecks()
	checks = append(checks, doctorCheck{Check: "multicast-env", OK: true, Detail: strings.TrimSpace(multicastEnv)})
	if *jsonOut {
		enc := json.NewEncoder(cmdOut)
		for _, c := range checks {
			if err := enc.Encode(c); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintln(cmdOut, "hiercoll doctor")
	for _, c := range checks {
		fmt.Fprint(cmdOut, c.text)
	}
	fmt.Fprint(cmdOut, multicastEnv)
	return nil
}

// doctorCheck is one thing doctor looked at: a name, whether it is usable,
// and what was found (text is the report's lines for it).
type doctorCheck struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	text   string
}

// doctorChecks probes CUDA, NVML (GPUs, links, peer access), NCCL and
// NVSHMEM.
func doctorChecks() []doctorCheck {
	var checks []doctorCheck
	add := func(name string, ok bool, text string) {
		checks = append(checks, doctorCheck{Check: name, OK: ok, Detail: strings.TrimSpace(text), text: text})
	}
	if rep, err := cuda.Probe(); err != nil {
		add("cuda", false, fmt.Sprintf("CUDA: not usable: %v\n  (the CPU backend still runs: hiercoll demo --backend sim)\n", err))
	} else {
		add("cuda", true, rep.String())
	}
	if t, err := topo.Probe(); err != nil {
		add("nvml", false, fmt.Sprintf("NVML: %v\n", err))
	} else {
		add("nvml", true, t.Table())
		if len(t.GPUs) > 1 {
			all := make([]int, len(t.GPUs))
			for i := range all {
				all[i] = i
			}
			if err := t.CheckPeerAccess(all); err != nil {
				add("peer-access", false, fmt.Sprintf("peer access: %v\n", err))
			} else {
				add("peer-access", true, "peer access: every pair of GPUs can reach each other (copy-engine scatter possible)\n")
			}
		}
	}
	if lib, err := nccl.Load(); err != nil {
		add("nccl", false, fmt.Sprintf("NCCL: %v\n", err))
	} else if v, err := lib.Version(); err == nil {
		a, b, c := nccl.DecodeVersion(v)
		add("nccl", true, fmt.Sprintf("NCCL: %d.%d.%d (%s)\n", a, b, c, lib.Path()))
	} else {
		add("nccl", false, fmt.Sprintf("NCCL: %s: version: %v\n", lib.Path(), err))
	}
	if lib, err := nvshmem.Load(); err != nil {
		add("nvshmem", false, fmt.Sprintf("NVSHMEM: %v\n", err))
	} else {
		add("nvshmem", true, fmt.Sprintf("NVSHMEM: host library %s\n", lib.Path()))
	}
	return checks
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
