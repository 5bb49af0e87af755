package bootstrap

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// server is the rendezvous rank 0 runs: it admits one connection per rank,
// collects each collective's contributions and sends every rank the result.
//
// Goroutines: one accept loop; per connection one reader (handshake first,
// then the member's frames) and, once admitted, one writer draining the
// member's queue. Every state change happens under mu; writers only write.
type server struct {
	size, localSize int
	token           string
	timeout         time.Duration // handshake and per-frame write bound
	ln              net.Listener

	mu        sync.Mutex
	members   []*member // by rank: the admitted connection, nil while that rank is missing
	everyone  []*member // every member ever admitted, for shutdown
	joined    int
	assembled bool
	rounds    map[uint64]*pendingRound
	failure   []byte                // the job's failure frame, once it has failed
	pending   map[net.Conn]struct{} // connections still in their handshake
	closing   bool
	wg        sync.WaitGroup
}

// member is one admitted rank's connection.
type member struct {
	rank       int
	conn       net.Conn
	out        chan []byte // frames for the writer
	outClosed  bool
	next       uint64 // the sequence number its next contribution must carry
	left       bool   // it said bye: it takes no further part
	readerDone chan struct{}
}

// pendingRound is one collective in progress.
type pendingRound struct {
	op        opKind
	firstRank int // who opened it, to name a kind mismatch
	blobs     [][]byte
	arrived   []bool
	count     int
}

// memberQueue is deep enough for everything a well-behaved member can have
// outstanding (a welcome, one result, one missing answer, a failure); a
// member whose queue overflows is not reading and is cut off.
const memberQueue = 16

func startServer(ln net.Listener, size, localSize int, token string, timeout time.Duration) *server {
	s := &server{
		size: size, localSize: localSize, token: token, timeout: timeout, ln: ln,
		members: make([]*member, size),
		rounds:  map[uint64]*pendingRound{},
		pending: map[net.Conn]struct{}{},
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s
}

func (s *server) acceptLoop() {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait, and keep serving.
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			conn.Close()
			return
		}
		s.pending[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(conn)
	}
}

// serveConn admits a connection and then reads its frames until it ends. A
// connection that fails the handshake is answered with a reject and closed;
// nothing else notices.
func (s *server) serveConn(conn net.Conn) {
	defer s.wg.Done()
	m, rej := s.handshake(conn)
	if m == nil {
		if rej != nil {
			s.reject(conn, *rej)
		}
		conn.Close()
		s.mu.Lock()
		delete(s.pending, conn)
		s.mu.Unlock()
		return
	}
	defer close(m.readerDone)
	conn.SetReadDeadline(time.Time{}) // a member may idle between collectives as long as it likes
	limit := max(9+MaxBlob, reportLimit(s.size))
	for {
		t, body, err := readFrame(conn, limit)
		if err == nil {
			err = s.handle(m, t, body)
		}
		if err != nil {
			s.lost(m, err)
			return
		}
	}
}

// handshake checks the hello. It returns the admitted member, or the reject
// to send (nil when the connection is not worth an answer).
func (s *server) handshake(conn net.Conn) (*member, *report) {
	conn.SetDeadline(time.Now().Add(s.timeout))
	nonce := make([]byte, nonceSize)
	rand.Read(nonce)
	if _, err := conn.Write(encodeChallenge(nonce)); err != nil {
		return nil, nil
	}
	t, body, err := readFrame(conn, maxHandshakeFrame)
	if err != nil {
		if errors.Is(err, errFrameTooLarge) || errors.Is(err, errMalformed) {
			return nil, &report{code: codeInvalid, reason: err.Error()}
		}
		return nil, nil // silence or a hang-up: nothing to answer
	}
	if t != frameHello {
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("expected a hello, got a %v", t)}
	}
	h, err := decodeHello(body)
	if err != nil {
		return nil, &report{code: codeInvalid, reason: err.Error()}
	}
	if !hmac.Equal(h.mac, helloMAC(s.token, nonce, h)) {
		return nil, &report{code: codeInvalid, reason: "wrong token"}
	}
	switch {
	case h.size != s.size:
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d says the world has %d ranks; rank 0 says %d", h.rank, h.size, s.size)}
	case h.localSize != s.localSize:
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d says a node has %d ranks; rank 0 says %d", h.rank, h.localSize, s.localSize)}
	case h.rank < 0 || h.rank >= s.size || h.localRank != h.rank%s.localSize:
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d with local rank %d is not node-major in a world of %d with %d per node",
			h.rank, h.localRank, s.size, s.localSize)}
	}
	return s.admit(conn, h.rank)
}

// reject answers a connection that failed its handshake and closes it
// gently: the write side first, then what the client still sends is read and
// dropped for a moment, because closing with unread input would reset the
// connection and could destroy the answer before the client reads it.
func (s *server) reject(conn net.Conn, r report) {
	if _, err := conn.Write(encodeReport(frameReject, r)); err != nil {
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(min(time.Second, s.timeout)))
	io.Copy(io.Discard, io.LimitReader(conn, 1<<20))
}

func (s *server) admit(conn net.Conn, rank int) (*member, *report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, &report{code: codeClosed, reason: "the rendezvous is shutting down"}
	}
	if s.members[rank] != nil {
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d has already joined", rank)}
	}
	delete(s.pending, conn)
	m := &member{rank: rank, conn: conn, out: make(chan []byte, memberQueue), readerDone: make(chan struct{})}
	s.members[rank] = m
	s.everyone = append(s.everyone, m)
	s.joined++
	s.wg.Add(1)
	go s.writeLoop(m)
	if s.joined == s.size {
		s.assembled = true
		welcome := encodeWelcome(s.size)
		for _, peer := range s.members {
			s.send(peer, welcome)
		}
	}
	return m, nil
}

func (s *server) writeLoop(m *member) {
	defer s.wg.Done()
	for f := range m.out {
		m.conn.SetWriteDeadline(time.Now().Add(s.timeout))
		if _, err := m.conn.Write(f); err != nil {
			m.conn.Close() // the reader notices and reports the member lost
			for range m.out {
			}
			return
		}
	}
}

// send queues a frame for m. Called with mu held.
func (s *server) send(m *member, f []byte) {
	if m == nil || m.outClosed {
		return
	}
	select {
	case m.out <- f:
	default:
		m.conn.Close() // it has stopped reading
	}
}

func (s *server) closeOut(m *member) {
	if !m.outClosed {
		m.outClosed = true
		close(m.out)
	}
}

// handle processes one frame of an admitted member; an error cuts it off.
func (s *server) handle(m *member, t frameType, body []byte) error {
	switch t {
	case frameContribute:
		seq, op, blob, err := decodeContribute(body)
		if err != nil {
			return err
		}
		return s.contribute(m, seq, op, blob)
	case frameQuery:
		seq, err := decodeQuery(body)
		if err != nil {
			return err
		}
		s.query(m, seq)
		return nil
	case frameBye:
		r, err := decodeReport(body, s.size)
		if err != nil {
			return err
		}
		s.bye(m, r)
		return nil
	}
	return fmt.Errorf("%w: unexpected %v", errMalformed, t)
}

func (s *server) contribute(m *member, seq uint64, op opKind, blob []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.left {
		return nil
	}
	if !s.assembled {
		return fmt.Errorf("%w: a contribution before every rank has joined", errMalformed)
	}
	if seq != m.next {
		return fmt.Errorf("%w: contribution to collective %d, expected %d", errMalformed, seq, m.next)
	}
	m.next++
	if s.failure != nil {
		s.send(m, s.failure)
		return nil
	}
	r := s.rounds[seq]
	if r == nil {
		for _, peer := range s.members {
			if peer != nil && peer.left {
				s.fail(report{code: codePeer, ranks: []int{peer.rank},
					reason: fmt.Sprintf("rank %d closed its communicator before %v %d", peer.rank, op, seq)})
				return nil
			}
		}
		r = &pendingRound{op: op, firstRank: m.rank, blobs: make([][]byte, s.size), arrived: make([]bool, s.size)}
		s.rounds[seq] = r
	}
	if r.op != op {
		s.fail(report{code: codeInvalid, ranks: []int{r.firstRank, m.rank},
			reason: fmt.Sprintf("collective %d: rank %d called %v, rank %d called %v", seq, r.firstRank, r.op, m.rank, op)})
		return nil
	}
	r.blobs[m.rank], r.arrived[m.rank] = blob, true
	r.count++
	if r.count < s.size {
		return nil
	}
	delete(s.rounds, seq)
	var blobs [][]byte
	if op == opAllGather {
		blobs = r.blobs
	}
	result := encodeResult(seq, op, blobs)
	for _, peer := range s.members {
		s.send(peer, result)
	}
	return nil
}

func (s *server) query(m *member, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []int
	if seq == joinSeq {
		for rank, peer := range s.members {
			if peer == nil || peer.left {
				missing = append(missing, rank)
			}
		}
	} else if r := s.rounds[seq]; r != nil {
		for rank, ok := range r.arrived {
			if !ok {
				missing = append(missing, rank)
			}
		}
	}
	s.send(m, encodeMissing(seq, missing))
}

// bye is a member leaving. Before the world is complete its place is freed;
// after, a member that gave up (code != OK) fails the job with its reason, and
// one that closed cleanly fails only a collective that still needs it.
func (s *server) bye(m *member, r report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.left {
		return
	}
	m.left = true
	if !s.assembled {
		s.unseat(m)
		return
	}
	if r.code != codeOK {
		s.fail(report{code: r.code, ranks: r.ranks, reason: fmt.Sprintf("rank %d gave up: %s", m.rank, r.reason)})
		return
	}
	for seq, rd := range s.rounds {
		if !rd.arrived[m.rank] {
			s.fail(report{code: codePeer, ranks: []int{m.rank},
				reason: fmt.Sprintf("rank %d closed its communicator during %v %d", m.rank, rd.op, seq)})
			return
		}
	}
}

// lost is a member's connection ending or misbehaving.
func (s *server) lost(m *member, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.conn.Close()
	s.closeOut(m)
	if !s.assembled {
		s.unseat(m)
		return
	}
	if m.left || s.closing {
		return
	}
	m.left = true
	s.fail(report{code: codePeer, ranks: []int{m.rank}, reason: fmt.Sprintf("rank %d dropped its connection (%v)", m.rank, err)})
}

func (s *server) unseat(m *member) {
	if s.members[m.rank] == m {
		s.members[m.rank] = nil
		s.joined--
	}
}

// fail ends the job: every member still present gets the failure now, and
// any later contribution gets it as its answer. Called with mu held.
func (s *server) fail(r report) {
	if s.failure != nil {
		return
	}
	s.failure = encodeReport(frameFailure, r)
	clear(s.rounds)
	for _, m := range s.members {
		if m != nil && !m.left {
			s.send(m, s.failure)
		}
	}
}

// shutdown stops the rendezvous. With a final report, every member still
// present is told why first. Members get up to linger to hang up on their
// own (so that nothing queued for them is cut off); then every connection is
// closed and every goroutine is waited for. It returns the ranks that were
// still connected when linger ran out.
func (s *server) shutdown(final *report, linger time.Duration) (stayed []int) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closing = true
	s.ln.Close()
	for conn := range s.pending {
		conn.Close()
	}
	if final != nil {
		s.fail(*final)
	}
	everyone := s.everyone
	s.mu.Unlock()

	timer := time.NewTimer(linger)
	defer timer.Stop()
	expired := false
	for _, m := range everyone {
		if !expired {
			select {
			case <-m.readerDone:
				continue
			case <-timer.C:
				expired = true
			}
		}
		select {
		case <-m.readerDone:
		default:
			stayed = append(stayed, m.rank)
		}
	}
	s.mu.Lock()
	for _, m := range s.everyone {
		m.conn.Close()
		s.closeOut(m)
	}
	s.mu.Unlock()
	s.wg.Wait()
	slices.Sort(stayed)
	return stayed
}
