package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

// printEnv is a child that prints what it was given, one field per name.
const printEnv = `echo "R=$RANK W=$WORLD_SIZE LR=$LOCAL_RANK LW=$LOCAL_WORLD_SIZE G=$GROUP_RANK GW=$GROUP_WORLD_SIZE ` +
	`MA=$MASTER_ADDR MP=$MASTER_PORT HP=$HIERCOLL_PORT T=$HIERCOLL_TOKEN D=$HIERCOLL_DEVICE H=${NCCL_HOSTID-unset} ` +
	`NV=$NCCL_NVLS_ENABLE NS=$NVSHMEM_DISABLE_NVLS TS=$TORCH_SYMM_MEM_DISABLE_MULTICAST X=$EXTRA P=$PER"; ` +
	`echo "to stderr" >&2; printf "no newline"`

var linePrefix = regexp.MustCompile(`^\[rank (\d+)\] (.*)$`)

// runEnv runs printEnv on nproc ranks and returns each rank's fields.
func runEnv(t *testing.T, nproc, nodes int) []map[string]string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), Spec{
		NProc: nproc, Nodes: nodes,
		Command: []string{"/bin/sh", "-c", printEnv},
		Env:     []string{"EXTRA=for everyone"},
		PerRank: func(rank int) []string { return []string{fmt.Sprintf("PER=only-%d", rank)} },
		Stdout:  &stdout, Stderr: &stderr,
	})
	require.NoError(t, err)

	fields := make([]map[string]string, nproc)
	partial := make([]bool, nproc)
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		m := linePrefix.FindStringSubmatch(line)
		require.NotNil(t, m, "line without a rank prefix: %q", line)
		rank, _ := strconv.Atoi(m[1])
		require.Less(t, rank, nproc)
		if m[2] == "no newline" {
			partial[rank] = true
			continue
		}
		fields[rank] = map[string]string{}
		for _, kv := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(kv, "=")
			fields[rank][k] = v
		}
		// EXTRA has a space in it; Fields split it.
		require.Contains(t, m[2], "X=for everyone")
	}
	for rank := range nproc {
		require.NotNil(t, fields[rank], "rank %d printed nothing", rank)
		require.True(t, partial[rank], "rank %d: unended last line lost", rank)
		require.Contains(t, stderr.String(), fmt.Sprintf("[rank %d] to stderr\n", rank))
	}
	return fields
}

// wantSwitch is what a multicast switch must read in a child: the caller's
// value if it set one, else off.
func wantSwitch(name, off string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return off
}

func TestRunSetsTheEnvironment(t *testing.T) {
	const nproc = 4
	fields := runEnv(t, nproc, 1)
	for rank, f := range fields {
		r := strconv.Itoa(rank)
		require.Equal(t, r, f["R"])
		require.Equal(t, "4", f["W"])
		require.Equal(t, r, f["LR"])
		require.Equal(t, "4", f["LW"])
		require.Equal(t, "0", f["G"])
		require.Equal(t, "1", f["GW"])
		require.Equal(t, "127.0.0.1", f["MA"])
		require.Equal(t, r, f["D"], "HIERCOLL_DEVICE is the GPU ordinal")
		require.Equal(t, "unset", f["H"], "one node: no NCCL_HOSTID")
		require.Equal(t, wantSwitch(EnvNCCLNVLSEnable, "0"), f["NV"])
		require.Equal(t, wantSwitch(EnvNVSHMEMDisableNVLS, "1"), f["NS"])
		require.Equal(t, wantSwitch(EnvTorchSymmMemDisableMulticast, "1"), f["TS"])
		require.Equal(t, "only-"+r, f["P"])
		// One job: the same ports and token everywhere.
		require.Equal(t, fields[0]["MP"], f["MP"])
		require.Equal(t, fields[0]["HP"], f["HP"])
		require.Equal(t, fields[0]["T"], f["T"])
	}
	mp, err := strconv.Atoi(fields[0]["MP"])
	require.NoError(t, err)
	hp, err := strconv.Atoi(fields[0]["HP"])
	require.NoError(t, err)
	require.NotEqual(t, mp, hp)
	require.Regexp(t, `^[0-9a-f]{32}$`, fields[0]["T"])
}

func TestRunTokenIsFreshPerJob(t *testing.T) {
	a, b := runEnv(t, 1, 1)[0]["T"], runEnv(t, 1, 1)[0]["T"]
	require.Regexp(t, `^[0-9a-f]{32}$`, a)
	require.NotEqual(t, a, b, "every job gets its own secret")
}

func TestRunEmulatesNodes(t *testing.T) {
	fields := runEnv(t, 4, 2)
	for rank, f := range fields {
		require.Equal(t, strconv.Itoa(rank), f["R"])
		require.Equal(t, "2", f["LW"])
		require.Equal(t, strconv.Itoa(rank%2), f["LR"], "node-major numbering")
		require.Equal(t, strconv.Itoa(rank/2), f["G"])
		require.Equal(t, "2", f["GW"])
		require.Equal(t, fmt.Sprintf("hiercoll-node%d", rank/2), f["H"])
		require.Equal(t, strconv.Itoa(rank), f["D"])
	}
}

func TestRunFailureStopsTheOthers(t *testing.T) {
	var stdout bytes.Buffer
	start := time.Now()
	err := Run(context.Background(), Spec{
		NProc: 3,
		// Rank 1 fails; its siblings would sleep for half a minute, in a
		// grandchild of the shell (the "echo" keeps the shell from exec'ing it).
		Command: []string{"/bin/sh", "-c", `if [ "$RANK" = 1 ]; then sleep 0.2; exit 3; fi; sleep 30; echo never`},
		Stdout:  &stdout, Stderr: &stdout,
		Grace: 5 * time.Second,
	})
	elapsed := time.Since(start)
	require.Error(t, err)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.ErrorContains(t, err, "rank 1")
	require.ErrorContains(t, err, "exit status 3")
	var re *RankError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 1, re.Rank)
	require.Equal(t, 3, re.ExitCode)
	require.Less(t, elapsed, 4*time.Second, "the sleeping ranks must be stopped by SIGTERM, not waited for")
	require.NotContains(t, stdout.String(), "never")
}

func TestRunKillsAfterGrace(t *testing.T) {
	start := time.Now()
	err := Run(context.Background(), Spec{
		NProc: 2,
		// Rank 1 ignores SIGTERM (and so does its sleep): only SIGKILL ends
		// it. Rank 0 fails once rank 1 is ready.
		Command: []string{"/bin/sh", "-c", `if [ "$RANK" = 0 ]; then ` +
			`while [ ! -e "$READY" ]; do sleep 0.01; done; exit 5; fi; ` +
			`trap "" TERM; touch "$READY"; sleep 30; echo never`},
		Env:    []string{"READY=" + filepath.Join(t.TempDir(), "ready")},
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		Grace: 300 * time.Millisecond,
	})
	elapsed := time.Since(start)
	var re *RankError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 0, re.Rank)
	require.Equal(t, 5, re.ExitCode)
	require.ErrorContains(t, err, "rank 0")
	require.GreaterOrEqual(t, elapsed, 300*time.Millisecond)
	require.Less(t, elapsed, 5*time.Second)
}

func TestRunSignalledChild(t *testing.T) {
	err := Run(context.Background(), Spec{
		NProc:   2,
		Command: []string{"/bin/sh", "-c", `if [ "$RANK" = 1 ]; then kill -9 $$; fi; sleep 30; echo never`},
		Stdout:  &bytes.Buffer{}, Stderr: &bytes.Buffer{},
	})
	var re *RankError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 1, re.Rank)
	require.Equal(t, -1, re.ExitCode)
	require.ErrorContains(t, err, "signal: killed")
}

func TestRunContextCancelStopsEveryone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Run(ctx, Spec{
		NProc:   3,
		Command: []string{"/bin/sh", "-c", `sleep 30; echo never`},
		Stdout:  &bytes.Buffer{}, Stderr: &bytes.Buffer{},
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "stopped all 3 ranks")
	require.Less(t, time.Since(start), 4*time.Second)
}

func TestRunAllSucceed(t *testing.T) {
	var stdout bytes.Buffer
	err := Run(context.Background(), Spec{
		NProc: 2, Command: []string{"/bin/sh", "-c", `echo "hello from $RANK"`}, Stdout: &stdout, Stderr: &stdout,
	})
	require.NoError(t, err)
	require.Contains(t, stdout.String(), "[rank 0] hello from 0\n")
	require.Contains(t, stdout.String(), "[rank 1] hello from 1\n")
}

// RawStdout passes stdout lines through as written; stderr keeps the prefix.
func TestRunRawStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), Spec{
		NProc: 2, Command: []string{"/bin/sh", "-c", `if [ "$RANK" = 0 ]; then echo '{"row":1}'; fi; echo warn >&2`},
		Stdout: &stdout, Stderr: &stderr, RawStdout: true,
	})
	require.NoError(t, err)
	require.Equal(t, "{\"row\":1}\n", stdout.String())
	require.Contains(t, stderr.String(), "[rank 1] warn\n")
}

func TestRunRejectsBadSpecs(t *testing.T) {
	sh := []string{"/bin/sh", "-c", "true"}
	for name, spec := range map[string]Spec{
		"no ranks":        {NProc: 0, Command: sh},
		"nodes 3 of 4":    {NProc: 4, Nodes: 3, Command: sh},
		"negative nodes":  {NProc: 4, Nodes: -2, Command: sh},
		"no command":      {NProc: 2},
		"negative grace":  {NProc: 2, Command: sh, Grace: -time.Second},
		"bad env entry":   {NProc: 2, Command: sh, Env: []string{"NOEQUALS"}},
		"missing program": {NProc: 2, Command: []string{"/nonexistent/hiercoll-test-program"}},
	} {
		err := Run(context.Background(), spec)
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, name)
	}
	err := Run(context.Background(), Spec{NProc: 2, Command: []string{"/nonexistent/hiercoll-test-program"}})
	require.ErrorContains(t, err, "rank 0: cannot start")
}

func TestEnvPrecedenceAndMulticastSwitches(t *testing.T) {
	j := job{spec: Spec{NProc: 4, Nodes: 2, Env: []string{"MASTER_ADDR=10.0.0.7"},
		PerRank: func(rank int) []string { return []string{"HIERCOLL_DEVICE=" + strconv.Itoa(3-rank)} }},
		lws: 2, masterPort: 1000, hiercollPort: 2000, token: "tok"}
	base := []string{"PATH=/bin", "RANK=9", "NVSHMEM_DISABLE_NVLS=true", "NCCL_NVLS_ENABLE=", "UNRELATED=x=y"}
	env := map[string]string{}
	for _, kv := range j.env(3, base) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		_, dup := env[k]
		require.False(t, dup, "%s appears twice", k)
		env[k] = v
	}
	require.Equal(t, "/bin", env["PATH"])
	require.Equal(t, "x=y", env["UNRELATED"])
	require.Equal(t, "3", env[EnvRank], "the launcher's rank replaces the caller's")
	require.Equal(t, "10.0.0.7", env[EnvMasterAddr], "Spec.Env comes after the launcher's variables")
	require.Equal(t, "0", env[EnvDevice], "PerRank comes last")
	require.Equal(t, "1", env[EnvLocalRank])
	require.Equal(t, "1", env[EnvGroupRank])
	require.Equal(t, "hiercoll-node1", env[EnvNCCLHostID])
	require.Equal(t, "1000", env[EnvMasterPort])
	require.Equal(t, "2000", env[EnvHiercollPort])
	require.Equal(t, "tok", env[EnvHiercollToken])
	require.Equal(t, "true", env[EnvNVSHMEMDisableNVLS], "a value the caller set is kept")
	require.Equal(t, "0", env[EnvNCCLNVLSEnable], "set but empty counts as unset")
	require.Equal(t, "1", env[EnvTorchSymmMemDisableMulticast])
}

func TestLinePrefixing(t *testing.T) {
	var out bytes.Buffer
	w := (&sink{}).lines(2, &out)
	w.Write([]byte("ab"))
	w.Write([]byte("c\nde\n\nf"))
	w.flush()
	require.Equal(t, "[rank 2] abc\n[rank 2] de\n[rank 2] \n[rank 2] f\n", out.String())

	out.Reset()
	w.Write(bytes.Repeat([]byte("x"), maxLine+10))
	w.Write([]byte("\n"))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2, "an over-long line is cut, not held back forever")
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "[rank 2] "))
	}
}

func TestRunChildLeavingABackgroundProcess(t *testing.T) {
	// The shell exits 0 at once; the sleep it leaves behind keeps the output
	// pipe open past the grace period. The rank succeeded all the same.
	var stdout bytes.Buffer
	err := Run(context.Background(), Spec{
		NProc: 1, Command: []string{"/bin/sh", "-c", `sleep 1 & echo started`},
		Stdout: &stdout, Stderr: &stdout, Grace: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	require.Contains(t, stdout.String(), "[rank 0] started\n")
}
