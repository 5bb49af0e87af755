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
	if os.Getenv(floodEnv) != "1" {
		t.Skip("the job of TestTCPSilentConnectionsWithFewDescriptors; runs only when re-executed by it")
	}
	if err := floodedJob(); err != nil {
		fmt.Fprintln(os.Stderr, "flooded job:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func floodedJob() error {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: floodFDs, Max: floodFDs}); err != nil {
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
	const strangers = 300
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFloodedJob$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), floodEnv+"=1")
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
