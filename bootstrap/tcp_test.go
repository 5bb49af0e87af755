package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

const testToken = "test-token-5f1c"

// checkGoroutines fails the test if it leaves goroutines behind. Call it
// first, so that its cleanup runs after every other one.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				t.Errorf("goroutines leaked: %d before the test, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func testConfig(rank, size, lws int, addr string, timeout time.Duration) TCPConfig {
	return TCPConfig{Rank: rank, Size: size, LocalRank: rank % lws, LocalSize: lws, Addr: addr, Token: testToken, Timeout: timeout}
}

// listen opens rank 0's listener on a loopback port the kernel picks.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}

// onRanks runs f for the given ranks concurrently and returns their errors.
func onRanks(ranks []int, f func(rank int) error) []error {
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Go(func() { errs[i] = f(r) })
	}
	wg.Wait()
	return errs
}

func allRanks(size int) []int {
	ranks := make([]int, size)
	for i := range ranks {
		ranks[i] = i
	}
	return ranks
}

// newWorld joins size ranks over loopback and closes them at cleanup.
func newWorld(t *testing.T, size, lws int, timeout time.Duration) ([]*tcpComm, string) {
	t.Helper()
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, size)
	errs := onRanks(allRanks(size), func(r int) error {
		var l net.Listener
		if r == 0 {
			l = ln
		}
		var err error
		comms[r], err = dialTCP(context.Background(), testConfig(r, size, lws, addr, timeout), l)
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	t.Cleanup(func() { closeWorld(t, comms) })
	return comms, addr
}

// closeWorld closes rank 0 last: its Close waits for the others.
func closeWorld(t *testing.T, comms []*tcpComm) {
	for r := len(comms) - 1; r >= 0; r-- {
		if comms[r] != nil {
			require.NoError(t, comms[r].Close(), "close rank %d", r)
		}
	}
}

func blobFor(rank, round, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(rank*31 + round*7 + i)
	}
	return b
}

// roundSizes are the blob sizes of one round, the same on every rank.
func roundSizes(round, size int) []int {
	sizes := make([]int, size)
	rng := rand.New(rand.NewPCG(uint64(round), 7))
	for r := range sizes {
		switch {
		case round == 1:
			sizes[r] = 0
		case round == 2:
			sizes[r] = MaxBlob
		case round%5 == 0:
			sizes[r] = []int{0, 1, MaxBlob, rng.IntN(MaxBlob)}[rng.IntN(4)]
		default:
			sizes[r] = rng.IntN(4096)
		}
	}
	return sizes
}

func TestTCPAllGatherManyRounds(t *testing.T) {
	checkGoroutines(t)
	const size, rounds = 4, 40
	comms, _ := newWorld(t, size, 2, 30*time.Second)
	for r, c := range comms {
		require.Equal(t, r, c.Rank())
		require.Equal(t, size, c.Size())
		require.Equal(t, r%2, c.LocalRank())
		require.Equal(t, 2, c.LocalSize())
		shape, err := ShapeOf(c)
		require.NoError(t, err)
		require.Equal(t, Shape{Nodes: 2, LocalSize: 2}, shape)
	}
	errs := onRanks(allRanks(size), func(r int) error {
		for round := range rounds {
			sizes := roundSizes(round, size)
			got, err := comms[r].AllGather(context.Background(), blobFor(r, round, sizes[r]))
			if err != nil {
				return err
			}
			if len(got) != size {
				return fmt.Errorf("round %d: %d blobs", round, len(got))
			}
			for from, b := range got {
				if !bytes.Equal(b, blobFor(from, round, sizes[from])) {
					return fmt.Errorf("round %d: blob of rank %d has %d bytes, want %d (or differs)", round, from, len(b), sizes[from])
				}
			}
			if round%7 == 3 {
				if err := comms[r].Barrier(context.Background()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func TestTCPBarrierWaitsForEveryone(t *testing.T) {
	checkGoroutines(t)
	const size, rounds = 4, 5
	comms, _ := newWorld(t, size, 4, 30*time.Second)
	var entered [rounds]atomic.Int32
	errs := onRanks(allRanks(size), func(r int) error {
		for round := range rounds {
			time.Sleep(time.Duration((r+round)%size) * 5 * time.Millisecond)
			entered[round].Add(1)
			if err := comms[r].Barrier(context.Background()); err != nil {
				return err
			}
			if n := entered[round].Load(); n != size {
				return fmt.Errorf("left barrier %d when only %d ranks had entered", round, n)
			}
		}
		return nil
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func TestTCPRendezvousTimeoutNamesMissingRank(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	start := time.Now()
	errs := onRanks([]int{0, 1, 2}, func(r int) error {
		var l net.Listener
		if r == 0 {
			l = ln
		}
		c, err := dialTCP(context.Background(), testConfig(r, 4, 2, addr, time.Second), l)
		if c != nil {
			c.Close()
		}
		return err
	})
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		require.ErrorIs(t, err, hcerr.ErrTimeout, "rank %d", r)
		require.ErrorContains(t, err, "rank 3 never arrived", "rank %d", r)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, []int{3}, e.Ranks, "rank %d: %v", r, err)
		require.Equal(t, r, e.Rank)
	}
	require.Less(t, time.Since(start), 8*time.Second)
}

func TestTCPRendezvousWithoutRankZero(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nobody serves here
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := DialTCP(ctx, testConfig(2, 4, 2, addr, time.Minute))
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "rank 0's server at "+addr+" did not answer")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, []int{0}, e.Ranks)
}

func TestTCPRankZeroStartsLast(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, 3)
	errs := onRanks(allRanks(3), func(r int) error {
		var l net.Listener
		if r == 0 {
			l = ln
			time.Sleep(300 * time.Millisecond) // the others retry meanwhile
		}
		var err error
		comms[r], err = dialTCP(context.Background(), testConfig(r, 3, 1, addr, 20*time.Second), l)
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	closeWorld(t, comms)
}

func TestTCPCollectiveTimeoutNamesMissingRank(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 4, 2, 30*time.Second)
	start := time.Now()
	errs := onRanks([]int{0, 1, 2}, func(r int) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := comms[r].AllGather(ctx, []byte{byte(r)})
		return err
	})
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		require.ErrorIs(t, err, hcerr.ErrTimeout, "rank %d", r)
		require.ErrorContains(t, err, "all-gather 0", "rank %d", r)
		require.ErrorContains(t, err, "rank 3 never arrived", "rank %d", r)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, []int{3}, e.Ranks, "rank %d: %v", r, err)
	}
	require.Less(t, time.Since(start), 8*time.Second)
	// The job is over: the late rank hears why instead of hanging. (Had it
	// arrived before the server read the others' goodbyes, it would have
	// completed the collective, which is as good an outcome.)
	waitFailed(t, comms[0].srv)
	_, err := comms[3].AllGather(context.Background(), nil)
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "gave up")
	// And a broken Comm stays broken.
	_, err = comms[0].AllGather(context.Background(), nil)
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "failed earlier")
}

// waitFailed waits until the server has recorded the job's failure.
func waitFailed(t *testing.T, s *server) {
	t.Helper()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.failure != nil
	}, 10*time.Second, 5*time.Millisecond)
}

func TestTCPDroppedRankIsNamed(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 4, 2, 30*time.Second)
	start := time.Now()
	errs := onRanks(allRanks(4), func(r int) error {
		if r == 2 {
			time.Sleep(100 * time.Millisecond)
			return comms[2].conn.Close() // rank 2 dies mid-job: no bye
		}
		_, err := comms[r].AllGather(context.Background(), []byte("x"))
		return err
	})
	require.Less(t, time.Since(start), 10*time.Second, "the others must not wait for their timeout")
	for _, r := range []int{0, 1, 3} {
		t.Logf("rank %d: %v", r, errs[r])
		require.ErrorIs(t, errs[r], hcerr.ErrPeer, "rank %d", r)
		require.ErrorContains(t, errs[r], "rank 2 dropped its connection", "rank %d", r)
		var e *Error
		require.ErrorAs(t, errs[r], &e)
		require.Equal(t, []int{2}, e.Ranks)
	}
}

func TestTCPServerLossIsNamed(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 3, 1, 30*time.Second)
	errs := onRanks([]int{1, 2}, func(r int) error {
		if r == 1 {
			time.Sleep(100 * time.Millisecond)
			comms[0].srv.shutdown(nil, 0) // rank 0's process dies
		}
		_, err := comms[r].AllGather(context.Background(), nil)
		return err
	})
	for i, err := range errs {
		t.Logf("rank %d: %v", i+1, err)
		require.ErrorIs(t, err, hcerr.ErrPeer, "rank %d", i+1)
		require.ErrorContains(t, err, "lost the connection to rank 0's server", "rank %d", i+1)
	}
}

func TestTCPCancelledRankIsNamed(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 3, 1, 30*time.Second)
	errs := onRanks(allRanks(3), func(r int) error {
		ctx := context.Background()
		if r == 1 {
			c, cancel := context.WithCancel(ctx)
			time.AfterFunc(100*time.Millisecond, cancel)
			ctx = c
		} else if r == 2 {
			time.Sleep(300 * time.Millisecond) // arrives after rank 1 gave up
		}
		_, err := comms[r].AllGather(ctx, nil)
		return err
	})
	t.Logf("%v\n%v", errs[1], errs[0])
	require.ErrorIs(t, errs[1], context.Canceled)
	for _, r := range []int{0, 2} {
		require.ErrorIs(t, errs[r], hcerr.ErrPeer, "rank %d", r)
		require.ErrorContains(t, errs[r], "rank 1 gave up: its all-gather 0 was cancelled", "rank %d", r)
	}
}

// foreignHello plays a client that reaches the hello with the given token
// and fields, and returns what the server answers.
func foreignHello(t *testing.T, addr, token string, h hello) (frameType, report) {
	t.Helper()
	conn := dialRetry(t, addr)
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	typ, body, err := readFrame(conn, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	nonce, err := decodeChallenge(body)
	require.NoError(t, err)
	h.nonce = make([]byte, nonceSize)
	h.mac = helloMAC(token, nonce, h)
	_, err = conn.Write(encodeHello(h))
	require.NoError(t, err)
	return expectReject(t, conn)
}

// expectReject reads the server's reject and then the end of the connection.
func expectReject(t *testing.T, conn net.Conn) (frameType, report) {
	t.Helper()
	typ, body, err := readFrame(conn, reportLimit(maxWorld))
	require.NoError(t, err)
	rep, err := decodeReport(body, maxWorld)
	require.NoError(t, err)
	_, _, err = readFrame(conn, reportLimit(maxWorld))
	require.ErrorIs(t, err, io.EOF, "the server must close a rejected connection")
	return typ, rep
}

func dialRetry(t *testing.T, addr string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			return conn
		}
		require.True(t, time.Now().Before(deadline), "dial %s: %v", addr, err)
		time.Sleep(20 * time.Millisecond)
	}
}

// rawChallenge connects and reads the challenge, leaving the hello to the caller.
func rawChallenge(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn := dialRetry(t, addr)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	typ, _, err := readFrame(conn, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	return conn
}

func TestTCPForeignConnectionsAreRejected(t *testing.T) {
	checkGoroutines(t)
	const size = 4
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, size)
	defer func() { closeWorld(t, comms) }()
	joined := make(chan []error)
	go func() {
		joined <- onRanks([]int{0, 1, 2}, func(r int) error {
			var l net.Listener
			if r == 0 {
				l = ln
			}
			var err error
			comms[r], err = dialTCP(context.Background(), testConfig(r, size, 2, addr, 30*time.Second), l)
			return err
		})
	}()

	// While ranks 0-2 wait for rank 3, strangers knock.
	typ, rep := foreignHello(t, addr, "not the token", hello{rank: 3, size: size, localRank: 1, localSize: 2})
	require.Equal(t, frameReject, typ)
	require.Equal(t, "wrong token", rep.reason)

	_, rep = foreignHello(t, addr, testToken, hello{rank: 3, size: 8, localRank: 1, localSize: 2})
	require.Contains(t, rep.reason, "world has 8 ranks; rank 0 says 4")

	_, rep = foreignHello(t, addr, testToken, hello{rank: 3, size: size, localRank: 0, localSize: 2})
	require.Contains(t, rep.reason, "not node-major")

	garbage := rawChallenge(t, addr)
	_, err := garbage.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	_, rep = expectReject(t, garbage)
	require.Contains(t, rep.reason, "frame too large")
	garbage.Close()

	shortHello := rawChallenge(t, addr)
	_, err = shortHello.Write(newFrame(frameHello, 0).raw([]byte("HCOL")).bytes())
	require.NoError(t, err)
	_, rep = expectReject(t, shortHello)
	require.Contains(t, rep.reason, "malformed")
	shortHello.Close()

	silent := dialRetry(t, addr) // says nothing at all; must not hold anyone up
	defer silent.Close()

	// Rank 3 arrives; the job assembles and runs.
	var err3 error
	comms[3], err3 = dialTCP(context.Background(), testConfig(3, size, 2, addr, 30*time.Second), nil)
	require.NoError(t, err3)
	for r, err := range <-joined {
		require.NoError(t, err, "rank %d", r)
	}

	// An impostor for a rank already present is turned away.
	_, rep = foreignHello(t, addr, testToken, hello{rank: 1, size: size, localRank: 1, localSize: 2})
	require.Contains(t, rep.reason, "rank 1 has already joined")
	_, rep = foreignHello(t, addr, "not the token", hello{rank: 1, size: size, localRank: 1, localSize: 2})
	require.Equal(t, "wrong token", rep.reason)

	errs := onRanks(allRanks(size), func(r int) error {
		for round := range 5 {
			got, err := comms[r].AllGather(context.Background(), []byte{byte(r), byte(round)})
			if err != nil {
				return err
			}
			for from, b := range got {
				if !bytes.Equal(b, []byte{byte(from), byte(round)}) {
					return fmt.Errorf("round %d: rank %d sent %v", round, from, b)
				}
			}
		}
		return comms[r].Barrier(context.Background())
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
}

func TestTCPOversizedFrames(t *testing.T) {
	checkGoroutines(t)
	const size = 3
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, size)
	defer func() { closeWorld(t, comms) }()

	// Rank 2 is played by hand, so that it can misbehave once admitted.
	joined := make(chan []error)
	go func() {
		joined <- onRanks([]int{0, 1}, func(r int) error {
			var l net.Listener
			if r == 0 {
				l = ln
			}
			var err error
			comms[r], err = dialTCP(context.Background(), testConfig(r, size, 1, addr, 30*time.Second), l)
			return err
		})
	}()
	// A stranger announcing a 2 GiB hello is turned away without the server
	// allocating it.
	huge := rawChallenge(t, addr)
	_, err := huge.Write([]byte{0x80, 0, 0, 0, byte(frameHello)})
	require.NoError(t, err)
	_, rep := expectReject(t, huge)
	require.Contains(t, rep.reason, "frame too large")
	huge.Close()

	rank2 := dialRetry(t, addr)
	defer rank2.Close()
	rank2.SetDeadline(time.Now().Add(20 * time.Second))
	typ, body, err := readFrame(rank2, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	nonce, err := decodeChallenge(body)
	require.NoError(t, err)
	h := hello{rank: 2, size: size, localRank: 0, localSize: 1, nonce: make([]byte, nonceSize)}
	h.mac = helloMAC(testToken, nonce, h)
	_, err = rank2.Write(encodeHello(h))
	require.NoError(t, err)
	typ, _, err = readFrame(rank2, 64)
	require.NoError(t, err)
	require.Equal(t, frameAdmit, typ, "the server proves it holds the token first")
	typ, _, err = readFrame(rank2, 64)
	require.NoError(t, err)
	require.Equal(t, frameWelcome, typ)
	for r, err := range <-joined {
		require.NoError(t, err, "rank %d", r)
	}

	// Locally, an oversized contribution is refused before anything is sent,
	// and the Comm stays usable.
	_, err = comms[0].AllGather(context.Background(), make([]byte, MaxBlob+1))
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, "exceeds MaxBlob")

	// Rank 2 announces a contribution larger than MaxBlob: it is cut off and
	// the others are told who, at once.
	errs := onRanks([]int{0, 1}, func(r int) error {
		if r == 1 {
			time.Sleep(50 * time.Millisecond)
			var hdr [5]byte
			hdr[4] = byte(frameContribute)
			n := uint32(1 + 9 + MaxBlob + 1)
			hdr[0], hdr[1], hdr[2], hdr[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
			if _, err := rank2.Write(hdr[:]); err != nil {
				return err
			}
		}
		_, err := comms[r].AllGather(context.Background(), []byte("ok"))
		return err
	})
	for r, err := range errs {
		require.ErrorIs(t, err, hcerr.ErrPeer, "rank %d", r)
		require.ErrorContains(t, err, "rank 2 dropped its connection", "rank %d", r)
		require.ErrorContains(t, err, "frame too large", "rank %d", r)
	}
}

func TestTCPLateAnswerToAQueryIsIgnored(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 2, 1, 30*time.Second)
	gather := func() error {
		errs := onRanks(allRanks(2), func(r int) error {
			_, err := comms[r].AllGather(context.Background(), []byte{byte(r)})
			return err
		})
		return errors.Join(errs...)
	}
	require.NoError(t, gather())
	// As if rank 1 had asked about collective 0 just as its result arrived:
	// the answer comes after the result, during the next collective.
	require.NoError(t, comms[1].write(context.Background(), encodeQuery(0), time.Now().Add(time.Second)))
	require.NoError(t, comms[1].write(context.Background(), encodeQuery(joinSeq), time.Now().Add(time.Second)))
	require.NoError(t, gather())
	require.NoError(t, gather())
}

func TestTCPMismatchedCollectives(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 2, 1, 30*time.Second)
	errs := onRanks(allRanks(2), func(r int) error {
		if r == 0 {
			return comms[0].Barrier(context.Background())
		}
		_, err := comms[1].AllGather(context.Background(), []byte("x"))
		return err
	})
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, "rank %d", r)
		require.ErrorContains(t, err, "collective 0: rank ", "rank %d", r)
	}
}

func TestTCPCloseAndReuse(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 2, 2, 30*time.Second)
	errs := onRanks(allRanks(2), func(r int) error { return comms[r].Barrier(context.Background()) })
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, comms[1].Close())
	require.NoError(t, comms[1].Close())
	_, err := comms[1].AllGather(context.Background(), nil)
	require.ErrorIs(t, err, hcerr.ErrClosed)
	// Rank 0 learns that rank 1 is gone instead of waiting.
	err = comms[0].Barrier(context.Background())
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.ErrorContains(t, err, "rank 1 closed its communicator")
}

func TestTCPSingleRank(t *testing.T) {
	checkGoroutines(t)
	comms, _ := newWorld(t, 1, 1, 30*time.Second)
	got, err := comms[0].AllGather(context.Background(), []byte("solo"))
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("solo")}, got)
	require.NoError(t, comms[0].Barrier(context.Background()))
	require.NoError(t, comms[0].Close())
	_, err = net.Dial("tcp", comms[0].addr)
	require.Error(t, err, "the listener must be closed")
}

func TestTCPRankZeroClosesFirst(t *testing.T) {
	checkGoroutines(t)
	const size = 4
	comms, _ := newWorld(t, size, 2, 30*time.Second)
	closing, closed := make([]time.Time, size), make([]time.Time, size)
	errs := onRanks(allRanks(size), func(r int) error {
		got, err := comms[r].AllGather(context.Background(), blobFor(r, 0, MaxBlob))
		if err != nil {
			return err
		}
		if len(got) != size || !bytes.Equal(got[size-1], blobFor(size-1, 0, MaxBlob)) {
			return fmt.Errorf("wrong result")
		}
		if r != 0 {
			time.Sleep(100 * time.Millisecond) // still busy when rank 0 closes
		}
		closing[r] = time.Now()
		err = comms[r].Close()
		closed[r] = time.Now()
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	for r := 1; r < size; r++ {
		require.True(t, closed[0].After(closing[r]), "rank 0 closed before rank %d left", r)
	}
}

func TestTCPConfigChecks(t *testing.T) {
	good := testConfig(1, 4, 2, "127.0.0.1:1", time.Second)
	for name, mutate := range map[string]func(*TCPConfig){
		"size 0":         func(c *TCPConfig) { c.Size = 0 },
		"rank too big":   func(c *TCPConfig) { c.Rank = 4 },
		"lws 3":          func(c *TCPConfig) { c.LocalSize = 3 },
		"local rank":     func(c *TCPConfig) { c.LocalRank = 0 },
		"no token":       func(c *TCPConfig) { c.Token = "" },
		"no port":        func(c *TCPConfig) { c.Addr = "127.0.0.1" },
		"negative limit": func(c *TCPConfig) { c.Timeout = -time.Second },
	} {
		cfg := good
		mutate(&cfg)
		_, err := DialTCP(context.Background(), cfg)
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument, name)
	}
}

func TestRankList(t *testing.T) {
	require.Equal(t, "rank 3", rankList([]int{3}))
	require.Equal(t, "ranks 2, 3", rankList([]int{2, 3}))
	many := allRanks(20)
	require.True(t, strings.HasSuffix(rankList(many), ", … (20 in all)"), rankList(many))
}
