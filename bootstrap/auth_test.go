package bootstrap

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

// squat serves ln as a process that does not hold the job's token would:
// per connection it sends a challenge, reads the hello and then answers with
// play. It returns a stop that closes everything and waits.
func squat(t *testing.T, ln net.Listener, play func(conn net.Conn)) (stop func()) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				conn.SetDeadline(time.Now().Add(20 * time.Second))
				nonce := make([]byte, nonceSize)
				rand.Read(nonce)
				if _, err := conn.Write(encodeChallenge(nonce)); err != nil {
					return
				}
				if _, _, err := readFrame(conn, maxHandshakeFrame); err != nil {
					return
				}
				play(conn)
			})
		}
	})
	return func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// forgedBlob is what a squatter would like a rank to believe rank 0 said.
var forgedBlob = []byte("forged by the squatter")

// TestTCPSquatterWithoutTokenIsRefused: a process listening on the
// rendezvous port before rank 0 (and without the token) welcomes a rank and
// answers its all-gather with forged blobs. The rank must refuse it at the
// handshake, naming the server, instead of taking the forgery.
func TestTCPSquatterWithoutTokenIsRefused(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	stop := squat(t, ln, func(conn net.Conn) {
		conn.Write(encodeWelcome(2))
		if _, _, err := readFrame(conn, 9+MaxBlob); err != nil {
			return
		}
		conn.Write(encodeResult(0, opAllGather, [][]byte{forgedBlob, forgedBlob}))
		io.Copy(io.Discard, conn)
	})
	defer stop()

	start := time.Now()
	c, err := DialTCP(context.Background(), testConfig(1, 2, 1, addr, 10*time.Second))
	if err == nil {
		got, agErr := c.AllGather(context.Background(), []byte("mine"))
		c.Close()
		t.Fatalf("rank 1 joined the squatter's world; its all-gather returned %q, %v", got, agErr)
	}
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.ErrorContains(t, err, "the server at "+addr)
	require.ErrorContains(t, err, "not this job's rank 0")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, 1, e.Rank)
	require.Less(t, time.Since(start), 5*time.Second, "refused at once, not retried until the timeout")
}

// TestTCPSquatterWithWrongProofIsRefused: a squatter that answers the hello
// with an admit it cannot compute.
func TestTCPSquatterWithWrongProofIsRefused(t *testing.T) {
	checkGoroutines(t)
	ln := listen(t)
	addr := ln.Addr().String()
	stop := squat(t, ln, func(conn net.Conn) {
		proof := make([]byte, macSize)
		rand.Read(proof)
		conn.Write(encodeAdmit(proof))
		io.Copy(io.Discard, conn)
	})
	defer stop()
	_, err := DialTCP(context.Background(), testConfig(1, 2, 1, addr, 10*time.Second))
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.ErrorContains(t, err, "the server at "+addr+" failed to prove it holds the job's secret")
}

// proxy sits between one rank and the real server. It forwards the client's
// bytes as they are, and the server's frame by frame, handing each tagged
// frame (type, body, tag) to edit, which returns the frames to forward in
// its place. It records every byte the server sent.
type proxy struct {
	ln       net.Listener
	upstream string
	edit     func(t frameType, body, tag []byte) [][]byte
	mu       sync.Mutex
	recorded bytes.Buffer
	wg       sync.WaitGroup
	conns    []net.Conn
}

func startProxy(t *testing.T, upstream string, edit func(t frameType, body, tag []byte) [][]byte) *proxy {
	p := &proxy{ln: listen(t), upstream: upstream, edit: edit}
	p.wg.Go(func() {
		for {
			down, err := p.ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			p.wg.Go(func() {
				io.Copy(up, down)
				up.(*net.TCPConn).CloseWrite()
			})
			p.wg.Go(func() {
				defer down.Close()
				p.relay(up, down)
			})
		}
	})
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) relay(up, down net.Conn) {
	forward := func(f []byte) bool {
		p.mu.Lock()
		p.recorded.Write(f)
		p.mu.Unlock()
		_, err := down.Write(f)
		return err == nil
	}
	// The challenge and the admit (or reject) are plain frames.
	for range 2 {
		t, body, err := readFrame(up, 1<<16)
		if err != nil || !forward(newFrame(t, len(body)).raw(body).bytes()) {
			return
		}
	}
	for {
		t, body, err := readFrame(up, 1<<24)
		if err != nil {
			return
		}
		tag := make([]byte, tagSize)
		if _, err := io.ReadFull(up, tag); err != nil {
			return
		}
		out := [][]byte{append(newFrame(t, len(body)).raw(body).bytes(), tag...)}
		if p.edit != nil {
			out = p.edit(t, body, tag)
		}
		for _, f := range out {
			if !forward(f) {
				return
			}
		}
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// twoRanksThrough joins rank 0 directly and rank 1 through a proxy.
func twoRanksThrough(t *testing.T, edit func(t frameType, body, tag []byte) [][]byte) ([]*tcpComm, *proxy) {
	ln := listen(t)
	p := startProxy(t, ln.Addr().String(), edit)
	comms := make([]*tcpComm, 2)
	errs := onRanks(allRanks(2), func(r int) error {
		var err error
		if r == 0 {
			comms[0], err = dialTCP(context.Background(), testConfig(0, 2, 1, ln.Addr().String(), 10*time.Second), ln)
		} else {
			comms[1], err = dialTCP(context.Background(), testConfig(1, 2, 1, p.addr(), 10*time.Second), nil)
		}
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return comms, p
}

// TestTCPTamperedFramesAreRefused: once the handshake is done, a frame
// altered on its way, or one played twice, is refused: the rank fails with
// an error naming the server instead of returning what it was fed.
func TestTCPTamperedFramesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t frameType, body, tag []byte) [][]byte
	}{
		{"altered blob", func(t frameType, body, tag []byte) [][]byte {
			if t == frameResult {
				body = bytes.Clone(body)
				body[len(body)-1] ^= 1
			}
			return [][]byte{append(newFrame(t, len(body)).raw(body).bytes(), tag...)}
		}},
		{"replayed result", func(t frameType, body, tag []byte) [][]byte {
			f := append(newFrame(t, len(body)).raw(body).bytes(), tag...)
			if t == frameResult {
				return [][]byte{f, f}
			}
			return [][]byte{f}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkGoroutines(t)
			comms, p := twoRanksThrough(t, tc.edit)
			errs := onRanks(allRanks(2), func(r int) error {
				for round := range 2 {
					if _, err := comms[r].AllGather(context.Background(), []byte{byte(r), byte(round)}); err != nil {
						return err
					}
				}
				return nil
			})
			t.Logf("rank 1: %v", errs[1])
			require.ErrorIs(t, errs[1], hcerr.ErrPeer)
			require.ErrorContains(t, errs[1], "a frame from the server at "+p.addr()+" fails authentication")
			require.ErrorIs(t, errs[1], errForged)
			// Rank 0 hears that rank 1 gave up, or finishes first; either way
			// it is not left hanging.
			for r := 1; r >= 0; r-- {
				comms[r].Close()
			}
		})
	}
}

// TestTCPReplayedConversationIsRefused: a process that recorded everything
// the real server said to rank 1 plays it back to a later rank 1. The
// server's proof covers rank 1's fresh nonce, so the replay fails.
func TestTCPReplayedConversationIsRefused(t *testing.T) {
	checkGoroutines(t)
	comms, p := twoRanksThrough(t, nil)
	errs := onRanks(allRanks(2), func(r int) error {
		_, err := comms[r].AllGather(context.Background(), []byte{byte(r)})
		return err
	})
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	closeWorld(t, comms)
	p.close()
	p.mu.Lock()
	recorded := bytes.Clone(p.recorded.Bytes())
	p.mu.Unlock()

	ln := listen(t)
	addr := ln.Addr().String()
	var wg sync.WaitGroup
	wg.Go(func() {
		conn, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.Write(recorded)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, conn)
	})
	defer wg.Wait()
	_, err := DialTCP(context.Background(), testConfig(1, 2, 1, addr, 10*time.Second))
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.ErrorContains(t, err, "failed to prove it holds the job's secret")
}
