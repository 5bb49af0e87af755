package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The fuzz targets run their seed corpus (testdata/fuzz/<name>/, written by
// TestWriteFuzzCorpus from wireSeeds and serverSeeds) in every `go test`;
// `go test -fuzz=FuzzWireDecode ./bootstrap/` searches further.

// FuzzWireDecode feeds a stream of frames to the wire decoder: the frame
// reader, every body decoder and the tag check. Input: a world size byte,
// then the stream. Nothing may panic or allocate past a frame's limit, and
// whatever decodes must encode back to the same bytes.
func FuzzWireDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		size := 1 + int(data[0]%16)
		stream := data[1:]
		r := bytes.NewReader(stream)
		const limit = 1 << 16
		for {
			typ, body, err := readFrame(r, limit)
			if err != nil {
				break
			}
			if uint64(len(body)) > limit {
				t.Fatalf("a %v of %d bytes passed a limit of %d", typ, len(body), limit)
			}
			checkRoundTrip(t, typ, body, size)
		}
		// The same stream as tagged frames of a session: they must fail
		// authentication, not crash.
		s := newSession(testToken, make([]byte, nonceSize), hello{nonce: make([]byte, nonceSize)}, false)
		r = bytes.NewReader(stream)
		for {
			if _, _, err := readTagged(r, limit, s); err != nil {
				if !errors.Is(err, errForged) && !errors.Is(err, errFrameTooLarge) && !errors.Is(err, errMalformed) &&
					!errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
		}
	})
}

// checkRoundTrip decodes body as a frame of typ and, when that works,
// checks that encoding the result gives the frame back.
func checkRoundTrip(t *testing.T, typ frameType, body []byte, size int) {
	t.Helper()
	frame := newFrame(typ, len(body)).raw(body).bytes()
	same := func(what string, got []byte) {
		t.Helper()
		if !bytes.Equal(got, frame) {
			t.Fatalf("%s does not round-trip:\n got %x\nwant %x", what, got, frame)
		}
	}
	switch typ {
	case frameChallenge:
		if nonce, err := decodeChallenge(body); err == nil {
			same("challenge", encodeChallenge(nonce))
		}
	case frameHello:
		if h, err := decodeHello(body); err == nil {
			same("hello", encodeHello(h))
		}
	case frameAdmit:
		if proof, err := decodeAdmit(body); err == nil {
			same("admit", encodeAdmit(proof))
		}
	case frameReject, frameFailure, frameBye:
		if rep, err := decodeReport(body, size); err == nil {
			for _, r := range rep.ranks {
				if r < 0 || r >= size {
					t.Fatalf("rank %d decoded in a world of %d", r, size)
				}
			}
			same("report", encodeReport(typ, rep))
		}
	case frameContribute:
		if seq, op, blob, err := decodeContribute(body); err == nil {
			same("contribute", encodeContribute(seq, op, blob))
		}
	case frameResult:
		if seq, op, blobs, err := decodeResult(body); err == nil {
			same("result", encodeResult(seq, op, blobs))
		}
	case frameQuery:
		if seq, err := decodeQuery(body); err == nil {
			same("query", encodeQuery(seq))
		}
	case frameMissing:
		if seq, ranks, err := decodeMissing(body, size); err == nil {
			same("missing", encodeMissing(seq, ranks))
		}
	}
}

// FuzzServerFrames drives the server's frame handling: a hello of fuzzed
// bytes against the handshake's checks, then a world of admitted members
// whose fuzzed frames (correctly tagged, or not) go through the same per-frame
// step as a member's reader. After every frame the server's accounting must
// hold: no member over its bounds, nothing negative, nothing left behind.
//
// Input: size byte, hello length byte and hello body, then frames as
// rank byte, flags byte (bit 0: spoil the tag), length uint16, type byte,
// body.
func FuzzServerFrames(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		size := 1 + int(data[0]%4)
		data = data[1:]
		s := &server{
			size: size, localSize: 1, token: testToken, timeout: time.Second, handshake: time.Second,
			limits: limitsFor(size), ln: fakeListener{},
			members: make([]*member, size), rounds: map[uint64]*pendingRound{}, pending: map[net.Conn]uint64{},
		}
		defer func() {
			s.shutdown(nil, 0)
			checkUsage(t, s)
			if s.use.queued != 0 {
				t.Fatalf("%d bytes still counted as queued after shutdown", s.use.queued)
			}
		}()

		// A fuzzed hello, as a stranger's.
		n := int(data[0])
		data = data[1:]
		if n > len(data) {
			return
		}
		serverNonce := make([]byte, nonceSize)
		if h, rej := s.checkHello(serverNonce, frameHello, data[:n]); rej == nil {
			t.Fatalf("a fuzzed hello for rank %d passed the token check", h.rank)
		}
		data = data[n:]

		// The members, admitted as their clients would be.
		clients := make([]*session, size)
		for r := range size {
			h := hello{rank: r, size: size, localRank: 0, localSize: 1, nonce: make([]byte, nonceSize)}
			h.nonce[0] = byte(r)
			h.mac = helloMAC(testToken, serverNonce, h)
			hh, rej := s.checkHello(serverNonce, frameHello, encodeHello(h)[5:])
			if rej != nil {
				t.Fatalf("rank %d's hello refused: %s", r, rej.reason)
			}
			conn := &fakeConn{}
			s.mu.Lock()
			s.pending[conn] = uint64(r)
			s.mu.Unlock()
			if _, rej := s.admit(conn, serverNonce, hh); rej != nil {
				t.Fatalf("rank %d not admitted: %s", r, rej.reason)
			}
			clients[r] = newSession(testToken, serverNonce, h, false)
		}

		gone := make([]bool, size)
		for len(data) >= 5 {
			rank, flags := int(data[0])%size, data[1]
			n := int(binary.BigEndian.Uint16(data[2:4]))
			data = data[4:]
			if n < 1 || n > len(data) {
				return
			}
			f := newFrame(frameType(data[0]), n-1).raw(data[1:n]).bytes()
			data = data[n:]
			if gone[rank] {
				continue
			}
			tag := clients[rank].tag(frameDigest(f))
			if flags&1 != 0 {
				tag[0] ^= 1
			}
			s.mu.Lock()
			m := s.members[rank]
			s.mu.Unlock()
			if !s.serveFrame(m, bytes.NewReader(append(f, tag...))) {
				gone[rank] = true
			}
			checkUsage(t, s)
		}
	})
}

// checkUsage checks the server's accounting against its state and bounds.
func checkUsage(t *testing.T, s *server) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var buffered int64
	for _, m := range s.members {
		if m == nil {
			continue
		}
		if m.open < 0 || m.open > maxOpenPerMember || m.buffered < 0 || m.buffered > s.limits.memberBuffered {
			t.Fatalf("rank %d: %d open rounds, %d bytes buffered", m.rank, m.open, m.buffered)
		}
		if m.queued < 0 || m.queued > s.limits.memberQueued {
			t.Fatalf("rank %d: %d bytes queued, limit %d", m.rank, m.queued, s.limits.memberQueued)
		}
		buffered += m.buffered
	}
	if buffered != s.use.buffered || s.use.buffered > s.limits.totalBuffered || s.use.queued < 0 {
		t.Fatalf("accounting: members hold %d bytes, total says %+v", buffered, s.use)
	}
	if len(s.rounds) > s.size {
		t.Fatalf("%d rounds open in a world of %d", len(s.rounds), s.size)
	}
	for seq, r := range s.rounds {
		count := 0
		for _, ok := range r.arrived {
			if ok {
				count++
			}
		}
		if count != r.count || count >= s.size {
			t.Fatalf("round %d: %d arrived, count %d", seq, count, r.count)
		}
	}
	if s.failure != nil && len(s.rounds) != 0 {
		t.Fatalf("the job failed with %d rounds still open", len(s.rounds))
	}
}

// fakeConn is a member's connection that swallows what the server writes.
type fakeConn struct {
	mu     sync.Mutex
	closed bool
}

func (c *fakeConn) Read([]byte) (int, error) { return 0, net.ErrClosed }
func (c *fakeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	return len(p), nil
}
func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}
func (c *fakeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fakeConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeConn) SetWriteDeadline(time.Time) error { return nil }

type fakeListener struct{}

func (fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (fakeListener) Close() error              { return nil }
func (fakeListener) Addr() net.Addr            { return &net.TCPAddr{} }

// wireSeeds are valid and malformed streams for FuzzWireDecode.
func wireSeeds() [][]byte {
	h := hello{rank: 1, size: 4, localRank: 1, localSize: 2, nonce: bytes.Repeat([]byte{7}, nonceSize), mac: bytes.Repeat([]byte{9}, macSize)}
	frames := [][]byte{
		encodeChallenge(bytes.Repeat([]byte{1}, nonceSize)),
		encodeHello(h),
		encodeAdmit(bytes.Repeat([]byte{2}, macSize)),
		encodeReport(frameReject, report{code: codeInvalid, reason: "wrong token"}),
		encodeWelcome(4),
		encodeContribute(0, opAllGather, []byte("blob")),
		encodeResult(0, opAllGather, [][]byte{[]byte("a"), nil, []byte("ccc"), {}}),
		encodeContribute(1, opBarrier, nil),
		encodeResult(1, opBarrier, nil),
		encodeQuery(2),
		encodeMissing(2, []int{1, 3}),
		encodeReport(frameFailure, report{code: codePeer, ranks: []int{2}, reason: "rank 2 was cut off"}),
		encodeReport(frameBye, report{code: codeOK}),
	}
	seeds := [][]byte{append([]byte{3}, bytes.Join(frames, nil)...)}
	for _, f := range frames {
		seeds = append(seeds, append([]byte{3}, f...))
	}
	seeds = append(seeds,
		[]byte{3, 0, 0, 0, 0},                                                               // zero length
		[]byte{3, 0x80, 0, 0, 0, byte(frameHello)},                                          // 2 GiB announced
		[]byte{3, 0, 0, 0, 9, byte(frameResult), 0, 0},                                      // body cut short
		append([]byte{3}, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")...),                   // not ours
		append([]byte{3}, newFrame(frameResult, 13).u64(0).u8(1).u32(1<<30).bytes()...),     // a billion blobs in no bytes
		append([]byte{3}, newFrame(frameFailure, 9).u8(1).u32(1).u32(99).bytes()...),        // rank 99 of 4
		append([]byte{3}, newFrame(frameHello, 8).raw([]byte(wireMagic)).u32(1).bytes()...), // version 1
		append([]byte{3}, newFrame(frameContribute, 9).u64(0).u8(9).bytes()...),             // unknown collective
	)
	return seeds
}

// serverFrame is one command of a FuzzServerFrames input.
func serverFrame(rank, flags byte, f []byte) []byte {
	body := f[4:] // type and body
	out := []byte{rank, flags, 0, 0}
	binary.BigEndian.PutUint16(out[2:], uint16(len(body)))
	return append(out, body...)
}

// serverSeeds are inputs for FuzzServerFrames: worlds of 2 and 3 ranks (the
// size byte is size-1), well-behaved and misbehaving members.
func serverSeeds() [][]byte {
	seed := func(size byte, hello []byte, frames ...[]byte) []byte {
		b := append([]byte{size - 1, byte(len(hello))}, hello...)
		for _, f := range frames {
			b = append(b, f...)
		}
		return b
	}
	badHello := encodeHello(hello{rank: 0, size: 2, localSize: 1, nonce: make([]byte, nonceSize), mac: make([]byte, macSize)})[5:]
	gather := func(seq uint64, ranks ...byte) [][]byte {
		var fs [][]byte
		for _, r := range ranks {
			fs = append(fs, serverFrame(r, 0, encodeContribute(seq, opAllGather, []byte{r, byte(seq)})))
		}
		return fs
	}
	var clean [][]byte
	for seq := range uint64(3) {
		clean = append(clean, gather(seq, 0, 1)...)
	}
	clean = append(clean, serverFrame(0, 0, encodeContribute(3, opBarrier, nil)), serverFrame(1, 0, encodeQuery(3)),
		serverFrame(1, 0, encodeContribute(3, opBarrier, nil)), serverFrame(0, 0, encodeReport(frameBye, report{code: codeOK})),
		serverFrame(1, 0, encodeReport(frameBye, report{code: codeOK})))
	return [][]byte{
		seed(2, badHello, clean...),
		seed(3, []byte("junk"), append(gather(0, 0, 1, 2), gather(1, 2, 1, 0)...)...),
		// A member opening rounds ahead.
		seed(3, nil, serverFrame(1, 0, encodeContribute(0, opAllGather, []byte("x"))),
			serverFrame(1, 0, encodeContribute(1, opAllGather, []byte("y"))),
			serverFrame(0, 0, encodeContribute(0, opAllGather, nil))),
		// Out of order, mismatched kinds, a forged tag, a query flood.
		seed(2, nil, serverFrame(0, 0, encodeContribute(5, opAllGather, nil)), serverFrame(1, 0, encodeQuery(0))),
		seed(2, nil, serverFrame(0, 0, encodeContribute(0, opAllGather, nil)), serverFrame(1, 0, encodeContribute(0, opBarrier, nil))),
		seed(2, nil, serverFrame(0, 1, encodeContribute(0, opAllGather, nil)), serverFrame(1, 0, encodeContribute(0, opAllGather, nil))),
		seed(2, nil, append(gather(0, 0), bytes.Repeat(serverFrame(1, 0, encodeQuery(joinSeq)), 20))...),
		// A member giving up, one leaving mid-collective, a frame the
		// server never takes from a member.
		seed(3, nil, serverFrame(2, 0, encodeReport(frameBye, report{code: codeTimeout, ranks: []int{1}, reason: "gave up"})),
			serverFrame(0, 0, encodeContribute(0, opAllGather, nil))),
		seed(2, nil, serverFrame(0, 0, encodeContribute(0, opAllGather, nil)), serverFrame(1, 0, encodeReport(frameBye, report{code: codeOK}))),
		seed(2, nil, serverFrame(1, 0, encodeWelcome(2))),
	}
}

// TestWriteFuzzCorpus writes the seeds above to testdata/fuzz when
// HIERCOLL_WRITE_FUZZ_CORPUS=1, after a change of the wire format.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("HIERCOLL_WRITE_FUZZ_CORPUS") != "1" {
		t.Skip("set HIERCOLL_WRITE_FUZZ_CORPUS=1 to rewrite testdata/fuzz from the seeds")
	}
	for name, seeds := range map[string][][]byte{"FuzzWireDecode": wireSeeds(), "FuzzServerFrames": serverSeeds()} {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, seed := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seed)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
