//go:build unix

package bootstrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// floodEnv marks a re-executed test binary as the job of
// TestTCPSilentConnectionsWithFewDescriptors.
const floodEnv = "HIERCOLL_BOOTSTRAP_TEST_FLOOD"

// floodFDs is the descriptor limit of that job: room for its ranks and for
// maxPending strangers, not for 300.
const floodFDs = 128

// TestHelperFloodedJob is a 4-rank job in one process that may have only
// floodFDs descriptors. It prints its rendezvous address, waits for "go" and
// then runs.
func TestHelperFloodedJob(t *testing.T) {
	v := os.Getenv(floodEnv)
	if v == "" {
		t.Skip("the job of TestTCPSilentConnectionsWithFewDescriptors; runs only when re-executed by it")
	}
	limit := uint64(floodFDs)
	if spare, ok := strings.CutPrefix(v, "spare "); ok {
		// The limit leaves this many descriptors beyond those open now.
		n, err := strconv.Atoi(spare)
		if err != nil {
			fmt.Fprintln(os.Stderr, "flooded job:", err)
			os.Exit(1)
		}
		open, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			fmt.Fprintln(os.Stderr, "flooded job:", err)
			os.Exit(1)
		}
		limit = uint64(len(open) - 1 + n)
	}
	if err := floodedJob(limit); err != nil {
		fmt.Fprintln(os.Stderr, "flooded job:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func floodedJob(limit uint64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	const size = 4
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	fmt.Println(addr)
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || line != "go\n" {
		return fmt.Errorf("waiting for the go-ahead: %q, %v", line, err)
	}
	start := time.Now()
	comms := make([]*tcpComm, size)
	var wg sync.WaitGroup
	errs := make([]error, size)
	for r := range size {
		wg.Go(func() {
			var l net.Listener
			if r == 0 {
				l = ln
			}
			c, err := dialTCP(context.Background(), TCPConfig{Rank: r, Size: size, LocalRank: r, LocalSize: size,
				Addr: addr, Token: testToken, Timeout: 15 * time.Second}, l)
			if err != nil {
				errs[r] = err
				return
			}
			comms[r] = c
			for round := range 5 {
				if _, err := c.AllGather(context.Background(), []byte{byte(r), byte(round)}); err != nil {
					errs[r] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for r := size - 1; r >= 0; r-- {
		if err := comms[r].Close(); err != nil {
			return err
		}
	}
	fmt.Printf("job done in %v\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// TestTCPSilentConnectionsWithFewDescriptors reproduces issue 19's report:
// 300 silent connections against a rank 0 whose process may open only 128
// descriptors. Without a cap on connections in their handshake, they took
// every descriptor and the job timed out; with it, the job completes.
func TestTCPSilentConnectionsWithFewDescriptors(t *testing.T) {
	floodJob(t, "1")
}

// The same with only 64 descriptors to spare, fewer than maxPending
// strangers would take: the cap on connections in their handshake follows
// the descriptors left, and accept, finding none, drops a stranger.
func TestTCPSilentConnectionsWith64SpareDescriptors(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count the open descriptors")
	}
	floodJob(t, "spare 64")
}

// floodJob runs TestHelperFloodedJob (floodEnv set to mode) under 300
// silent connections and requires it to complete.
func floodJob(t *testing.T, mode string) {
	const strangers = 300
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFloodedJob$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), floodEnv+"="+mode)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	out := bufio.NewReader(stdout)
	addr, err := out.ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	addr = strings.TrimSpace(addr)

	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range strangers {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		silent = append(silent, c)
	}
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)
	rest, _ := io.ReadAll(out)
	err = cmd.Wait()
	t.Logf("job: %s%s", rest, stderr.String())
	require.NoError(t, err, "the job failed under %d silent connections", strangers)
	require.Contains(t, string(rest), "job done")
}
