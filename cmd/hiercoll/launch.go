package main

import (
	"context"
	"errors"
	"flag"

	"github.com/seed12530e24/hiercoll/launch"
	"github.com/seed12530e24/hiercoll/world"
)

// worldRank is the rank a job function gets.
type worldRank = world.Rank

func runLaunch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("launch", flag.ContinueOnError)
	nproc := fs.Int("nproc", 0, "processes to start (default: one per GPU)")
	nodes := fs.Int("nodes", 1, "emulated nodes on this host (must divide --nproc)")
	if err := parseFlags(fs, args, true, "nproc", "nodes"); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		return usageError{errors.New("no command to launch (put it after --)")}
	}
	n := *nproc
	if n == 0 {
		if n = world.GPUs(); n == 0 {
			return usageError{errors.New("--nproc is required when no GPU is visible")}
		}
	}
	return launch.Run(ctx, launch.Spec{NProc: n, Nodes: *nodes, Command: cmd, Stdout: cmdOut, Stderr: cmdErr})
}
