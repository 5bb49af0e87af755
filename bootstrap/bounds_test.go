package bootstrap

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

// handJoin plays rank's side of the handshake by hand, so that the rank can
// misbehave once admitted, and returns its connection and session.
func handJoin(t *testing.T, addr string, rank, size, lws int) (net.Conn, *session) {
	t.Helper()
	conn := dialRetry(t, addr)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	typ, body, err := readFrame(conn, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	nonce, err := decodeChallenge(body)
	require.NoError(t, err)
	h := hello{rank: rank, size: size, localRank: rank % lws, localSize: lws, nonce: make([]byte, nonceSize)}
	h.mac = helloMAC(testToken, nonce, h)
	_, err = conn.Write(encodeHello(h))
	require.NoError(t, err)
	typ, body, err = readFrame(conn, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameAdmit, typ)
	proof, err := decodeAdmit(body)
	require.NoError(t, err)
	require.Equal(t, admitProof(testToken, nonce, h), proof)
	return conn, newSession(testToken, nonce, h, false)
}

// writeTagged sends an encoded frame and its tag.
func writeTagged(conn net.Conn, s *session, f []byte) error {
	_, err := conn.Write(append(f, s.tag(frameDigest(f))...))
	return err
}

// joinWithHandPlayed joins the ranks in real, and rank hand by hand; it
// returns rank hand's connection and session once the welcome has come.
func joinWithHandPlayed(t *testing.T, size, hand int, real []int) ([]*tcpComm, net.Conn, *session) {
	t.Helper()
	ln := listen(t)
	addr := ln.Addr().String()
	comms := make([]*tcpComm, size)
	joined := make(chan []error)
	go func() {
		joined <- onRanks(real, func(r int) error {
			var l net.Listener
			if r == 0 {
				l = ln
			}
			var err error
			comms[r], err = dialTCP(context.Background(), testConfig(r, size, 1, addr, 30*time.Second), l)
			return err
		})
	}()
	conn, sess := handJoin(t, addr, hand, size, 1)
	typ, _, err := readTagged(conn, 64, sess)
	require.NoError(t, err)
	require.Equal(t, frameWelcome, typ)
	for i, err := range <-joined {
		require.NoError(t, err, "rank %d", real[i])
	}
	return comms, conn, sess
}

func serverUse(s *server) usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.use
}

// TestTCPMemberOpeningRoundsIsCutOff: an admitted rank that opens collective
// after collective without waiting for the others (issue 19: the server's
// heap grew 151 MiB in 150 frames) is cut off at its second open one, with an
// error naming it; the other ranks fail cleanly, and the server never holds
// more than one contribution of it.
func TestTCPMemberOpeningRoundsIsCutOff(t *testing.T) {
	checkGoroutines(t)
	const size = 3
	comms, rank2, sess := joinWithHandPlayed(t, size, 2, []int{0, 1})
	defer rank2.Close()

	flooded := make(chan int)
	go func() {
		sent := 0
		for seq := range 150 {
			if writeTagged(rank2, sess, encodeContribute(uint64(seq), opAllGather, make([]byte, MaxBlob))) != nil {
				break
			}
			sent++
		}
		flooded <- sent
	}()
	// The others come late: had they kept pace, each of rank 2's
	// contributions would have completed a collective, and it would never
	// have been more than one ahead.
	waitFailed(t, comms[0].srv)
	errs := onRanks([]int{0, 1}, func(r int) error {
		for range 3 {
			if _, err := comms[r].AllGather(context.Background(), []byte{byte(r)}); err != nil {
				return err
			}
		}
		return nil
	})
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		require.ErrorIs(t, err, hcerr.ErrPeer, "rank %d", r)
		require.ErrorContains(t, err, "rank 2 was cut off: it opened collective ", "rank %d", r)
		require.ErrorContains(t, err, "unfinished (at most 1 at a time)", "rank %d", r)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, []int{2}, e.Ranks)
	}
	rank2.Close()
	t.Logf("rank 2 got %d contributions out before the server cut it off", <-flooded)

	srv := comms[0].srv
	use := serverUse(srv)
	t.Logf("server accounting: %+v", use)
	require.LessOrEqual(t, use.peakMemberBuffered, int64(MaxBlob), "one open contribution per member")
	require.LessOrEqual(t, use.peakBuffered, srv.limits.totalBuffered)
	require.LessOrEqual(t, use.peakMemberQueued, srv.limits.memberQueued)
	closeWorld(t, comms)
	require.Zero(t, serverUse(srv).buffered, "a failed job's rounds are released")
}

// TestTCPMemberNotReadingIsCutOff: an admitted rank that contributes in step
// but never reads the results is cut off once more than two results wait
// for it, and named; the server's queue for it stays within its bound.
func TestTCPMemberNotReadingIsCutOff(t *testing.T) {
	checkGoroutines(t)
	const size, rounds = 3, 60
	comms, rank2, sess := joinWithHandPlayed(t, size, 2, []int{0, 1})
	defer rank2.Close()

	// Rank 2 contributes to collective s once ranks 0 and 1 have finished
	// collective s-1, as a rank would; it reads nothing.
	finished := make([]chan struct{}, rounds)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	var counts [rounds]int
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := range rounds {
			if seq > 0 {
				select {
				case <-finished[seq-1]:
				case <-stop:
					return
				}
			}
			if writeTagged(rank2, sess, encodeContribute(uint64(seq), opAllGather, make([]byte, MaxBlob))) != nil {
				return
			}
		}
	})
	errs := onRanks([]int{0, 1}, func(r int) error {
		for seq := range rounds {
			if _, err := comms[r].AllGather(context.Background(), make([]byte, MaxBlob)); err != nil {
				return err
			}
			mu.Lock()
			if counts[seq]++; counts[seq] == 2 {
				close(finished[seq])
			}
			mu.Unlock()
		}
		return nil
	})
	close(stop)
	rank2.Close()
	wg.Wait()
	for r, err := range errs {
		t.Logf("rank %d: %v", r, err)
		require.ErrorIs(t, err, hcerr.ErrPeer, "rank %d", r)
		require.ErrorContains(t, err, "rank 2 was cut off: it is not reading its answers", "rank %d", r)
	}
	srv := comms[0].srv
	use := serverUse(srv)
	t.Logf("server accounting: %+v, limit per member %d", use, srv.limits.memberQueued)
	require.LessOrEqual(t, use.peakMemberQueued, srv.limits.memberQueued)
	require.LessOrEqual(t, use.peakMemberBuffered, int64(MaxBlob))
	closeWorld(t, comms)
}

// TestTCPSilentConnectionsDuringRendezvous: 300 connections that never say a
// word arrive while a real 4-rank job assembles. The job completes, and the
// server never holds more than maxPending of them.
func TestTCPSilentConnectionsDuringRendezvous(t *testing.T) {
	checkGoroutines(t)
	const size, strangers = 4, 300
	ln := listen(t)
	addr := ln.Addr().String()
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range strangers {
			if c, err := net.Dial("tcp", addr); err == nil {
				silent = append(silent, c)
			}
		}
	})
	comms := make([]*tcpComm, size)
	errs := onRanks(allRanks(size), func(r int) error {
		var l net.Listener
		if r == 0 {
			l = ln
		}
		var err error
		comms[r], err = dialTCP(context.Background(), testConfig(r, size, 2, addr, 30*time.Second), l)
		return err
	})
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	errs = onRanks(allRanks(size), func(r int) error {
		for round := range 5 {
			if _, err := comms[r].AllGather(context.Background(), []byte{byte(r), byte(round)}); err != nil {
				return err
			}
		}
		return comms[r].Barrier(context.Background())
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	elapsed := time.Since(start)
	use := serverUse(comms[0].srv)
	t.Logf("%d silent connections; the job ran in %v; server accounting %+v", len(silent), elapsed, use)
	require.Len(t, silent, strangers)
	require.LessOrEqual(t, use.peakPending, maxPending)
	require.Less(t, elapsed, 10*time.Second)
	closeWorld(t, comms)
}

// TestTCPHandshakeDeadline: a connection that does not finish its handshake
// is closed after handshakeTimeout, whatever the Comm's timeout.
func TestTCPHandshakeDeadline(t *testing.T) {
	checkGoroutines(t)
	comms, addr := newWorld(t, 2, 1, time.Minute)
	_ = comms
	conn := rawChallenge(t, addr) // reads the challenge, then says nothing
	defer conn.Close()
	start := time.Now()
	_, err := conn.Read(make([]byte, 1))
	elapsed := time.Since(start)
	t.Logf("closed after %v: %v", elapsed, err)
	require.ErrorIs(t, err, io.EOF)
	require.Less(t, elapsed, handshakeTimeout+2*time.Second)
	require.Greater(t, elapsed, handshakeTimeout/2)
}
