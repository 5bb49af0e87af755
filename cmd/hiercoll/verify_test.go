package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// The command the ring's issue names: the CPU backend's default world (2
// nodes × 4) with 1 MiB of buffers per rank, where the largest shapes take
// the ring and its rail rounds, passes (one dtype: the ring's dtypes are
// rs2d's tests' to cover; here, the command line's path to it).
func TestVerifySimWithMaxSymm(t *testing.T) {
	code, out, errOut := hiercoll(t, "verify", "--backend", "sim", "--max-symm", "1M", "--dtypes", "bf16", "--calls", "1", "--repeat", "10")
	require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", errOut, out)
	require.Contains(t, out, "engine pull", "under the bound, the pull engine in rounds")
	require.Contains(t, out, "PASS")
}

// The registered input's path from the command line: the pull engine reads
// the caller's registered buffer, pulled by the copy engine from the
// smallest blocks (every case's last chunks halved, the slots reused), on
// 1 node × 2 GPUs and across 2 × 2.
func TestVerifySimRegisteredByTheCopyEngine(t *testing.T) {
	for _, nodes := range []string{"1", "2"} {
		code, out, errOut := hiercoll(t, "verify", "--backend", "sim", "--nodes", nodes, "--gpus", "2", "--engine", "pull", "--register",
			"--ce-pull", "1K", "--one-shot", "off", "--dtypes", "bf16,int32", "--calls", "2", "--repeat", "10")
		require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", errOut, out)
		require.Contains(t, out, "the input registered")
		require.Contains(t, out, "PASS")
	}
}

// verify --input-offset checks every case at an input past a 16-byte
// aligned base (the pull engine on one node of 4, whole and in rounds under
// a bound): bf16 at 2 bytes and int32 at 4 are summed, int32 at 2 bytes
// (not a whole element) must be refused; an offset past 15 bytes is refused.
func TestVerifySimInputOffset(t *testing.T) {
	for _, extra := range [][]string{{"--nodes", "1", "--gpus", "4"}, {"--nodes", "1", "--gpus", "4", "--max-symm", "1M"}} {
		args := append([]string{"verify", "--backend", "sim", "--engine", "pull", "--input-offset", "2", "--dtypes", "bf16,int32",
			"--calls", "1", "--repeat", "10"}, extra...)
		code, out, errOut := hiercoll(t, args...)
		require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", errOut, out)
		require.Contains(t, out, "the input 2 bytes past a 16-byte aligned base\n")
		require.Contains(t, out, "the input 2 bytes past a 16-byte aligned base (not a multiple of int32's 4 bytes: refused)")
		require.Contains(t, out, "PASS")
	}
	code, out, errOut := hiercoll(t, "verify", "--backend", "sim", "--nodes", "1", "--gpus", "4", "--engine", "pull", "--input-offset", "4",
		"--dtypes", "int32", "--calls", "1", "--repeat", "1")
	require.Equal(t, 0, code, "stderr:\n%s\nstdout:\n%s", errOut, out)
	require.Contains(t, out, "the input 4 bytes past a 16-byte aligned base\n")
	require.Contains(t, out, "PASS")
	code, _, errOut = hiercoll(t, "verify", "--backend", "sim", "--input-offset", "16", "--calls", "1", "--repeat", "1")
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "want 0 to 15")
}

func TestWorldFlagsMaxSymmAndRing(t *testing.T) {
	parse := func(args ...string) (*worldFlags, error) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var w worldFlags
		w.register(fs, worldUse{shape: true, rail: true, engine: true, lists: true})
		return &w, fs.Parse(args)
	}
	w, err := parse("--max-symm", "64M", "--ring-slots", "1", "--ring-chunk", "4K", "--ring-channels", "8", "--engine", "auto,ring")
	require.NoError(t, err)
	vs, err := w.variants()
	require.NoError(t, err)
	require.Len(t, vs, 2)
	for _, v := range vs {
		require.Equal(t, int64(64<<20), v.Config.MaxSymmetricBytes)
		require.Equal(t, 1, v.Config.Tuning.RingSlots)
		require.Equal(t, int64(4<<10), v.Config.Tuning.RingChunkBytes)
		require.Equal(t, 8, v.Config.Tuning.RingChannels)
	}
	w, err = parse()
	require.NoError(t, err)
	vs, err = w.variants()
	require.NoError(t, err)
	require.Zero(t, vs[0].Config.MaxSymmetricBytes, "no bound by default")
	for _, bad := range [][]string{{"--max-symm", "1X"}, {"--max-symm", "1M,2M"}, {"--ring-chunk", "-4"}, {"--ring-slots", "-1"}} {
		w, err := parse(bad...)
		require.NoError(t, err)
		_, err = w.variants()
		var ue usageError
		require.True(t, errors.As(err, &ue), "%q: %v", bad, err)
	}
}
