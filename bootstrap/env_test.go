package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

func torchrunEnv(rank int) map[string]string {
	return map[string]string{
		EnvRank: strconv.Itoa(rank), EnvWorldSize: "8", EnvLocalRank: strconv.Itoa(rank % 4), EnvLocalWorldSize: "4",
		EnvMasterAddr: "node0", EnvMasterPort: "29500", EnvRunID: "job-17",
	}
}

// withInsecureToken opts env out of a real secret.
func withInsecureToken(env map[string]string) map[string]string {
	env[EnvInsecureToken] = "1"
	return env
}

func TestEnvConfig(t *testing.T) {
	// Two nodes without HIERCOLL_TOKEN, opted out of a real secret.
	cfg, err := configFrom(lookupIn(withInsecureToken(torchrunEnv(5))))
	require.NoError(t, err)
	require.Equal(t, 5, cfg.Rank)
	require.Equal(t, 8, cfg.Size)
	require.Equal(t, 1, cfg.LocalRank)
	require.Equal(t, 4, cfg.LocalSize)
	require.Equal(t, "node0:29501", cfg.Addr, "MASTER_PORT belongs to torchrun; the rendezvous takes the next one")
	require.Len(t, cfg.Token, 64)
	require.Zero(t, cfg.Timeout)

	// Every rank of the job derives the same token; another job does not.
	other, err := configFrom(lookupIn(withInsecureToken(torchrunEnv(0))))
	require.NoError(t, err)
	require.Equal(t, cfg.Token, other.Token)
	env := withInsecureToken(torchrunEnv(0))
	env[EnvRunID] = "job-18"
	other, err = configFrom(lookupIn(env))
	require.NoError(t, err)
	require.NotEqual(t, cfg.Token, other.Token)

	env = torchrunEnv(0)
	env[EnvPort], env[EnvToken], env[EnvTimeout], env[EnvMasterAddr] = "7000", "s3cret", "90s", "::1"
	cfg, err = configFrom(lookupIn(env))
	require.NoError(t, err)
	require.Equal(t, "[::1]:7000", cfg.Addr)
	require.Equal(t, "s3cret", cfg.Token)
	require.Equal(t, 90*time.Second, cfg.Timeout)
}

func TestEnvConfigErrorsNameTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{EnvRank, "", "RANK is not set"},
		{EnvWorldSize, "", "WORLD_SIZE is not set"},
		{EnvLocalRank, "", "LOCAL_RANK is not set"},
		{EnvLocalWorldSize, "", "LOCAL_WORLD_SIZE is not set"},
		{EnvMasterAddr, "", "MASTER_ADDR is not set"},
		{EnvMasterPort, "", "MASTER_PORT is not set"},
		{EnvRank, "three", `RANK="three" is not an integer`},
		{EnvRank, "8", `RANK="8" is not an integer in [0, 7]`},
		{EnvWorldSize, "-1", `WORLD_SIZE="-1"`},
		{EnvLocalWorldSize, "3", "not node-major"},
		{EnvLocalRank, "3", "not node-major"},
		{EnvMasterPort, "65535", "MASTER_PORT=65535 leaves no port above it"},
		{EnvMasterPort, "http", `MASTER_PORT="http"`},
		{EnvPort, "0", `HIERCOLL_PORT="0"`},
		{EnvToken, "", "HIERCOLL_TOKEN is set but empty"},
		{EnvTimeout, "soon", `HIERCOLL_TIMEOUT="soon"`},
	} {
		env := torchrunEnv(5)
		if tc.value == "" && tc.name != EnvToken {
			delete(env, tc.name)
		} else {
			env[tc.name] = tc.value
		}
		_, err := configFrom(lookupIn(env))
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, tc.want)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestEnvPresent(t *testing.T) {
	t.Setenv(EnvRank, "")
	t.Setenv(EnvWorldSize, "")
	require.False(t, EnvPresent())
	t.Setenv(EnvRank, "0")
	require.False(t, EnvPresent())
	t.Setenv(EnvWorldSize, "2")
	require.True(t, EnvPresent())
}

// workerEnv marks a re-executed test binary as a rank of TestMultiProcess.
const workerEnv = "HIERCOLL_BOOTSTRAP_TEST_WORKER"

// TestHelperProcess is one rank of TestMultiProcess, in its own process.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(workerEnv) != "1" {
		t.Skip("a rank of TestMultiProcess; runs only when re-executed by it")
	}
	if err := worker(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func worker() error {
	if !EnvPresent() {
		return fmt.Errorf("no torchrun environment")
	}
	ctx := context.Background()
	comm, err := FromEnv(ctx)
	if err != nil {
		return err
	}
	rank := comm.Rank()
	if rank == 0 {
		// The parent probes the live job with strangers, then lets it go on.
		fmt.Println("joined")
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil || line != "go\n" {
			return fmt.Errorf("waiting for the go-ahead: %q, %v", line, err)
		}
	}
	const rounds = 20
	for round := range rounds {
		got, err := comm.AllGather(ctx, []byte(fmt.Sprintf("rank %d round %d", rank, round)))
		if err != nil {
			return err
		}
		for from, b := range got {
			if want := fmt.Sprintf("rank %d round %d", from, round); string(b) != want {
				return fmt.Errorf("round %d: got %q from rank %d, want %q", round, b, from, want)
			}
		}
	}
	if err := comm.Barrier(ctx); err != nil {
		return err
	}
	fmt.Printf("rank=%d size=%d local=%d/%d rounds=%d ok\n", rank, comm.Size(), comm.LocalRank(), comm.LocalSize(), rounds)
	return comm.Close()
}

// TestMultiProcess runs a 2-node × 2-rank world as four OS processes with
// torchrun's variables, and knocks on the rendezvous with a wrong token and
// with garbage while the job runs.
func TestMultiProcess(t *testing.T) {
	multiProcess(t, 2, "not the token", EnvToken+"=multiprocess-test-secret")
}

// TestMultiProcessOneHostSecretFile runs a one-node × 4-rank world as four OS
// processes without HIERCOLL_TOKEN: rank 0 shares a fresh secret through a
// private file. A stranger who computes the token of public values, as
// before issue 19, is turned away; the file is gone once the job runs.
func TestMultiProcessOneHostSecretFile(t *testing.T) {
	runtimeDir := t.TempDir()
	dir := filepath.Join(runtimeDir, "hiercoll")
	// The token anyone could compute from the job's variables (MASTER_PORT is
	// the rendezvous port - 1 in multiProcess).
	guessed := func(port int) string { return derivedToken("multiprocess-test", "127.0.0.1", port-1, 4) }
	multiProcess(t, 4, guessed, "XDG_RUNTIME_DIR="+runtimeDir)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err, "rank 0 makes the secret directory")
	require.Empty(t, entries, "rank 0 removes the secret file once every rank has joined")
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// multiProcess runs a world of 4 ranks, lws per node, as OS processes with
// torchrun's variables and env, and knocks on the rendezvous with
// strangerToken (a string, or a func of the rendezvous port) and with
// garbage while the job runs.
func multiProcess(t *testing.T, lws int, strangerToken any, env ...string) {
	const size = 4
	ln := listen(t)
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	addr := ln.Addr().String()
	token, ok := strangerToken.(string)
	if !ok {
		token = strangerToken.(func(int) string)(p)
	}

	var base []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "HIERCOLL_"), name == EnvRank, name == EnvWorldSize, name == EnvLocalRank,
			name == EnvLocalWorldSize, name == EnvMasterAddr, name == EnvMasterPort, name == EnvRunID:
			continue
		}
		base = append(base, kv)
	}
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr lockedBuffer
	}
	procs := make([]*proc, size)
	var rank0In io.WriteCloser
	// Rank 0 starts last: the others must retry until its server is up.
	for r := size - 1; r >= 0; r-- {
		pr := &proc{}
		pr.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.timeout=60s")
		pr.cmd.Env = append(base, workerEnv+"=1",
			EnvRank+"="+strconv.Itoa(r), EnvWorldSize+"="+strconv.Itoa(size),
			EnvLocalRank+"="+strconv.Itoa(r%lws), EnvLocalWorldSize+"="+strconv.Itoa(lws),
			EnvMasterAddr+"=127.0.0.1", EnvMasterPort+"="+strconv.Itoa(p-1), // the rendezvous takes MASTER_PORT+1
			EnvRunID+"=multiprocess-test", EnvTimeout+"=30s")
		pr.cmd.Env = append(pr.cmd.Env, env...)
		pr.cmd.Stdout, pr.cmd.Stderr = &pr.stdout, &pr.stderr
		if r == 0 {
			var err error
			rank0In, err = pr.cmd.StdinPipe()
			require.NoError(t, err)
		}
		require.NoError(t, pr.cmd.Start())
		procs[r] = pr
	}
	waited := make(chan struct{}, size)
	for _, pr := range procs {
		go func() {
			pr.cmd.Wait()
			waited <- struct{}{}
		}()
	}
	finished := 0
	t.Cleanup(func() {
		for _, pr := range procs {
			pr.cmd.Process.Kill()
		}
		for ; finished < size; finished++ {
			<-waited
		}
	})

	// Strangers knock while the ranks assemble ...
	typ, rep := foreignHello(t, addr, token, hello{rank: 1, size: size, localRank: 1, localSize: lws})
	require.Equal(t, frameReject, typ)
	require.Equal(t, "wrong token", rep.reason)

	// ... and once the job is running.
	require.Eventually(t, func() bool { return strings.Contains(procs[0].stdout.String(), "joined") },
		30*time.Second, 10*time.Millisecond, "rank 0 never joined: %s", procs[0].stderr.String())
	_, rep = foreignHello(t, addr, token, hello{rank: 2, size: size, localRank: 2 % lws, localSize: lws})
	require.Equal(t, "wrong token", rep.reason)
	garbage := rawChallenge(t, addr)
	_, err := garbage.Write([]byte("\x00\x00\x00\x02\x02xx"))
	require.NoError(t, err)
	_, rep = expectReject(t, garbage)
	require.Contains(t, rep.reason, "malformed")
	garbage.Close()

	_, err = io.WriteString(rank0In, "go\n")
	require.NoError(t, err)
	require.NoError(t, rank0In.Close())

	timeout := time.After(60 * time.Second)
	for ; finished < size; finished++ {
		select {
		case <-waited:
		case <-timeout:
			t.Fatal("the ranks did not finish within 60s")
		}
	}
	for r, pr := range procs {
		require.Equal(t, 0, pr.cmd.ProcessState.ExitCode(), "rank %d: stderr:\n%s", r, pr.stderr.String())
		require.Contains(t, pr.stdout.String(), fmt.Sprintf("rank=%d size=%d local=%d/%d rounds=20 ok", r, size, r%lws, lws),
			"rank %d: stdout:\n%s\nstderr:\n%s", r, pr.stdout.String(), pr.stderr.String())
	}
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
