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
//
// What a connection can make the server hold is bounded (see limits): a
// connection that has not authenticated gets a few seconds and a place among
// maxPending; an admitted member one open contribution and a queue of
// answers that a member reading them never fills.
type server struct {
	size, localSize int
	token           string
	timeout         time.Duration // per-frame write bound
	handshake       time.Duration // bound on a connection's handshake
	limits          limits
	ln              net.Listener
	// pendingLimit bounds the connections in their handshake: maxPending,
	// or fewer where the process has few descriptors to spare (pendingCap).
	pendingLimit int

	mu        sync.Mutex
	members   []*member // by rank: the admitted connection, nil while that rank is missing
	everyone  []*member // every member ever admitted, for shutdown
	joined    int
	assembled bool
	rounds    map[uint64]*pendingRound
	failure   []byte              // the job's failure frame, once it has failed
	pending   map[net.Conn]uint64 // connections still in their handshake, by arrival
	arrivals  uint64              // connections accepted so far
	use       usage               // what the server holds now, and its peaks
	closing   bool
	wg        sync.WaitGroup
}

// member is one admitted rank's connection.
type member struct {
	rank       int
	conn       net.Conn
	sess       *session
	out        chan outFrame // frames for the writer
	outClosed  bool
	next       uint64 // the sequence number its next contribution must carry
	open       int    // unfinished rounds holding its contribution
	buffered   int64  // bytes of those contributions
	queued     int64  // bytes of frames queued for it, not yet written
	left       bool   // it said bye: it takes no further part
	cut        error  // why the server cut it off, if it did
	readerDone chan struct{}
}

// outFrame is a frame for a member's writer: the encoded frame (which may be
// shared by every member) and this member's tag of it (nil for the admit).
type outFrame struct {
	b, tag []byte
}

func (o outFrame) size() int64 { return int64(len(o.b) + len(o.tag)) }

// pendingRound is one collective in progress.
type pendingRound struct {
	op        opKind
	firstRank int // who opened it, to name a kind mismatch
	blobs     [][]byte
	arrived   []bool
	count     int
}

const (
	// memberQueue is deep enough for everything a well-behaved member can
	// have outstanding (an admit, a welcome, a result or two, a missing
	// answer, a failure); a member whose queue overflows is not reading and
	// is cut off.
	memberQueue = 16
	// maxPending bounds the connections in their handshake (fewer where
	// descriptors are short: pendingCap). When one more arrives, or accept
	// finds no descriptor left, the oldest is dropped: a real rank answers its challenge
	// within a round trip, so a crowd of silent connections ages out while
	// every newcomer gets its chance at once.
	maxPending = 64
	// handshakeTimeout bounds a connection's handshake (at most the
	// Comm's timeout).
	handshakeTimeout = 3 * time.Second
	// maxOpenPerMember is how many unfinished collectives may hold a
	// member's contribution: a rank sends its next contribution only after
	// the result of its last, so one.
	maxOpenPerMember = 1
)

// limits are the server's memory bounds for a world, derived from MaxBlob
// and the world size.
type limits struct {
	// memberBuffered bounds the contribution bytes a member's open rounds
	// hold (maxOpenPerMember × MaxBlob), and totalBuffered all of them
	// (size × MaxBlob).
	memberBuffered, totalBuffered int64
	// memberQueued bounds the bytes queued for a member's writer: two
	// results (one just written as the next is queued) and a queue full of
	// control frames. Results are shared: the heap holds each once, however
	// many queues count it.
	memberQueued int64
}

func limitsFor(size int) limits {
	result := 5 + 13 + int64(size)*(4+MaxBlob) + tagSize
	control := 5 + int64(max(reportLimit(size), 12+4*uint64(size), macSize)) + tagSize
	return limits{
		memberBuffered: maxOpenPerMember * MaxBlob,
		totalBuffered:  int64(size) * MaxBlob,
		memberQueued:   2*result + memberQueue*control,
	}
}

// usage is what the server holds now, and the most it has held.
type usage struct {
	pending, peakPending                 int
	buffered, peakBuffered               int64 // contributions in unfinished rounds
	queued, peakQueued                   int64 // bytes queued for writers, counted per member
	peakMemberBuffered, peakMemberQueued int64
}

func startServer(ln net.Listener, size, localSize int, token string, timeout time.Duration) *server {
	s := &server{
		size: size, localSize: localSize, token: token, timeout: timeout,
		handshake: min(handshakeTimeout, timeout), limits: limitsFor(size), ln: ln, pendingLimit: pendingCap(size),
		members: make([]*member, size),
		rounds:  map[uint64]*pendingRound{},
		pending: map[net.Conn]uint64{},
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
			if outOfDescriptors(err) && s.dropOldestIfPending() {
				continue // a stranger's descriptor is free for the next connection
			}
			// Out of file descriptors with none to free, and the like:
			// wait, and keep serving.
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
		if len(s.pending) >= s.pendingLimit {
			s.dropOldestPending()
		}
		s.pending[conn] = s.arrivals
		s.arrivals++
		s.use.pending = len(s.pending)
		s.use.peakPending = max(s.use.peakPending, s.use.pending)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(conn)
	}
}

// pendingCap is how many connections of a world of size ranks may be in
// their handshake at once: maxPending, or, where the process has fewer
// descriptors to spare, half of what is left of them once each rank's
// connection has one here and one at its own end (ranks may share this
// process), so that strangers cannot take the descriptors the ranks need.
func pendingCap(size int) int {
	spare, ok := spareDescriptors()
	if !ok {
		return maxPending
	}
	return max(1, min(maxPending, (spare-2*size)/2))
}

// dropOldestIfPending drops the connection longest in its handshake, if
// there is one, and reports whether there was.
func (s *server) dropOldestIfPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return false
	}
	s.dropOldestPending()
	return true
}

// dropOldestPending closes the connection that has been in its handshake
// longest. Called with mu held.
func (s *server) dropOldestPending() {
	var oldest net.Conn
	for conn, arrival := range s.pending {
		if oldest == nil || arrival < s.pending[oldest] {
			oldest = conn
		}
	}
	oldest.Close()
	s.forgetPending(oldest)
}

// forgetPending takes conn off the pending list. Called with mu held.
func (s *server) forgetPending(conn net.Conn) {
	delete(s.pending, conn)
	s.use.pending = len(s.pending)
}

// serveConn admits a connection and then reads its frames until it ends. A
// connection that fails the handshake is answered with a reject and closed;
// nothing else notices.
func (s *server) serveConn(conn net.Conn) {
	defer s.wg.Done()
	m, rej := s.handshakeConn(conn)
	if m == nil {
		if rej != nil {
			s.reject(conn, *rej)
		}
		conn.Close()
		s.mu.Lock()
		s.forgetPending(conn)
		s.mu.Unlock()
		return
	}
	defer close(m.readerDone)
	conn.SetReadDeadline(time.Time{}) // a member may idle between collectives as long as it likes
	for s.serveFrame(m, conn) {
	}
}

// serveFrame reads and handles one frame of an admitted member. It returns
// false when the member is gone: its connection ended or it was cut off.
func (s *server) serveFrame(m *member, r io.Reader) bool {
	t, body, err := readTagged(r, max(9+MaxBlob, reportLimit(s.size)), m.sess)
	if err != nil {
		s.lost(m, err, errors.Is(err, errForged))
		return false
	}
	if err := s.handle(m, t, body); err != nil {
		s.lost(m, err, true)
		return false
	}
	return true
}

// handshakeConn runs the server's side of the handshake. It returns the
// admitted member, or the reject to send (nil when the connection is not
// worth an answer).
func (s *server) handshakeConn(conn net.Conn) (*member, *report) {
	conn.SetDeadline(time.Now().Add(s.handshake))
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
	h, rej := s.checkHello(nonce, t, body)
	if rej != nil {
		return nil, rej
	}
	return s.admit(conn, nonce, h)
}

// checkHello decides on a hello answering the challenge nonce.
func (s *server) checkHello(nonce []byte, t frameType, body []byte) (hello, *report) {
	if t != frameHello {
		return hello{}, &report{code: codeInvalid, reason: fmt.Sprintf("expected a hello, got a %v", t)}
	}
	h, err := decodeHello(body)
	if err != nil {
		return hello{}, &report{code: codeInvalid, reason: err.Error()}
	}
	if !hmac.Equal(h.mac, helloMAC(s.token, nonce, h)) {
		return hello{}, &report{code: codeInvalid, reason: "wrong token"}
	}
	switch {
	case h.size != s.size:
		return hello{}, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d says the world has %d ranks; rank 0 says %d", h.rank, h.size, s.size)}
	case h.localSize != s.localSize:
		return hello{}, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d says a node has %d ranks; rank 0 says %d", h.rank, h.localSize, s.localSize)}
	case h.rank < 0 || h.rank >= s.size || h.localRank != h.rank%s.localSize:
		return hello{}, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d with local rank %d is not node-major in a world of %d with %d per node",
			h.rank, h.localRank, s.size, s.localSize)}
	}
	return h, nil
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

func (s *server) admit(conn net.Conn, nonce []byte, h hello) (*member, *report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, &report{code: codeClosed, reason: "the rendezvous is shutting down"}
	}
	if _, ok := s.pending[conn]; !ok {
		return nil, nil // dropped for a newer connection meanwhile
	}
	if s.members[h.rank] != nil {
		return nil, &report{code: codeInvalid, reason: fmt.Sprintf("rank %d has already joined", h.rank)}
	}
	s.forgetPending(conn)
	m := &member{rank: h.rank, conn: conn, sess: newSession(s.token, nonce, h, true),
		out: make(chan outFrame, memberQueue), readerDone: make(chan struct{})}
	s.members[h.rank] = m
	s.everyone = append(s.everyone, m)
	s.joined++
	s.wg.Add(1)
	go s.writeLoop(m)
	s.enqueue(m, outFrame{b: encodeAdmit(admitProof(s.token, nonce, h))})
	if s.joined == s.size {
		s.assembled = true
		welcome := encodeWelcome(s.size)
		d := frameDigest(welcome)
		for _, peer := range s.members {
			s.send(peer, welcome, d)
		}
	}
	return m, nil
}

func (s *server) writeLoop(m *member) {
	defer s.wg.Done()
	for o := range m.out {
		m.conn.SetWriteDeadline(time.Now().Add(s.timeout))
		bufs := net.Buffers{o.b, o.tag}
		_, err := bufs.WriteTo(m.conn)
		s.mu.Lock()
		s.unqueue(m, o)
		s.mu.Unlock()
		if err != nil {
			m.conn.Close() // the reader notices and reports the member lost
			for o := range m.out {
				s.mu.Lock()
				s.unqueue(m, o)
				s.mu.Unlock()
			}
			return
		}
	}
}

// send queues a tagged frame for m; d is the frame's digest, computed once
// for every member it goes to. Called with mu held.
func (s *server) send(m *member, f []byte, d digest) {
	if m == nil || m.outClosed || m.cut != nil {
		return
	}
	s.enqueue(m, outFrame{b: f, tag: m.sess.tag(d)})
}

// enqueue hands o to m's writer, or cuts m off when it has stopped reading.
// Called with mu held.
func (s *server) enqueue(m *member, o outFrame) {
	n := o.size()
	if m.queued+n > s.limits.memberQueued {
		s.cutOff(m, fmt.Errorf("it is not reading its answers (%d bytes queued for it, at most %d)", m.queued+n, s.limits.memberQueued))
		return
	}
	select {
	case m.out <- o:
		m.queued += n
		s.use.queued += n
		s.use.peakQueued = max(s.use.peakQueued, s.use.queued)
		s.use.peakMemberQueued = max(s.use.peakMemberQueued, m.queued)
	default:
		s.cutOff(m, fmt.Errorf("it is not reading its answers (%d frames queued for it)", memberQueue))
	}
}

// unqueue is o leaving m's queue. Called with mu held.
func (s *server) unqueue(m *member, o outFrame) {
	m.queued -= o.size()
	s.use.queued -= o.size()
}

// cutOff closes m's connection for err; its reader then reports it lost.
// Called with mu held.
func (s *server) cutOff(m *member, err error) {
	if m.cut == nil {
		m.cut = err
	}
	m.conn.Close()
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
	if m.open >= maxOpenPerMember {
		return fmt.Errorf("it opened collective %d while its collective %d was unfinished (at most %d at a time)", seq, seq-1, maxOpenPerMember)
	}
	m.next++
	if s.failure != nil {
		s.send(m, s.failure, frameDigest(s.failure))
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
	m.open++
	m.buffered += int64(len(blob))
	s.use.buffered += int64(len(blob))
	s.use.peakBuffered = max(s.use.peakBuffered, s.use.buffered)
	s.use.peakMemberBuffered = max(s.use.peakMemberBuffered, m.buffered)
	if r.count < s.size {
		return nil
	}
	s.release(seq, r)
	var blobs [][]byte
	if op == opAllGather {
		blobs = r.blobs
	}
	result := encodeResult(seq, op, blobs)
	d := frameDigest(result)
	for _, peer := range s.members {
		s.send(peer, result, d)
	}
	return nil
}

// release drops an unfinished or finished round and its accounting. Called
// with mu held.
func (s *server) release(seq uint64, r *pendingRound) {
	delete(s.rounds, seq)
	for rank, ok := range r.arrived {
		if ok {
			m := s.members[rank]
			m.open--
			m.buffered -= int64(len(r.blobs[rank]))
			s.use.buffered -= int64(len(r.blobs[rank]))
		}
	}
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
	f := encodeMissing(seq, missing)
	s.send(m, f, frameDigest(f))
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

// lost is a member's connection ending, or the server cutting it off (cut)
// for err.
func (s *server) lost(m *member, err error, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cut && m.cut == nil {
		m.cut = err
	}
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
	reason := fmt.Sprintf("rank %d dropped its connection (%v)", m.rank, err)
	if m.cut != nil {
		reason = fmt.Sprintf("rank %d was cut off: %v", m.rank, m.cut)
	}
	s.fail(report{code: codePeer, ranks: []int{m.rank}, reason: reason})
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
	for seq, rd := range s.rounds {
		s.release(seq, rd)
	}
	d := frameDigest(s.failure)
	for _, m := range s.members {
		if m != nil && !m.left {
			s.send(m, s.failure, d)
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
