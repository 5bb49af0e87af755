package bootstrap

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// The rendezvous speaks frames over one TCP connection per rank:
//
//	length uint32 (big endian: the type byte plus the body) | type byte | body [| tag]
//
// A reader knows the largest frame it can legitimately get at each point of
// the conversation and refuses a longer one from its header alone, before it
// allocates. All integers are big endian.
//
// A conversation, client (any rank, rank 0 included) on the left:
//
//	                    <- challenge  magic, version, server nonce
//	hello ->                          magic, version, rank, size, local rank, local size, client nonce,
//	                                  HMAC(token, "hello" | server nonce | client nonce | fields)
//	                    <- admit      HMAC(token, "admit" | server nonce | client nonce | fields)  or  <- reject (and close)
//	  from here on every frame, both ways, is followed by its tag (below)
//	                    <- welcome    (once every rank has joined)
//	contribute ->                     seq, op, blob
//	                    <- result     seq, op, every rank's blob     or  <- failure (the job is over)
//	query ->                          seq: which ranks are we still waiting for?
//	                    <- missing    seq, ranks
//	bye ->                            code, ranks, reason (code 0: a clean close)
//
// Authentication is mutual: the client proves it holds the job's token over
// the server's fresh nonce, and the server proves it over the client's, so a
// process squatting on the port without the token is refused by the client
// before it can say anything that counts. Both proofs cover both nonces and
// the hello's fields, so neither can be replayed on another connection or
// for another rank. The tag after each later frame is
//
//	HMAC(session key, direction | frame number in that direction | SHA-256(type | body))
//
// with session key = HMAC(token, "session" | server nonce | client nonce |
// fields): a frame cannot be forged, replayed, reordered, reflected or moved
// to another connection. The body is hashed once, so that the server tags a
// result it sends to every rank with one hash of it and one small HMAC per
// rank. The tag is not counted in the length, so the limits on bodies are
// those of the plain format.

const (
	wireMagic   = "HCOL"
	wireVersion = 2 // 2: mutual authentication, tagged frames
	nonceSize   = 32
	macSize     = sha256.Size
	tagSize     = macSize

	// maxReason bounds the human-readable text of a reject, failure or bye.
	maxReason = 1024
	// maxHandshakeFrame bounds the challenge and the hello.
	maxHandshakeFrame = 256
	// maxWorld bounds the world size a rendezvous accepts.
	maxWorld = 1 << 16
	// joinSeq is the sequence number queries use during the rendezvous.
	joinSeq = ^uint64(0)
)

type frameType byte

const (
	frameChallenge  frameType = iota + 1 // server → client
	frameHello                           // client → server
	frameReject                          // server → client, then the server closes
	frameWelcome                         // server → client: every rank has joined
	frameContribute                      // client → server
	frameResult                          // server → client
	frameQuery                           // client → server
	frameMissing                         // server → client
	frameFailure                         // server → client: the job has failed
	frameBye                             // client → server
	frameAdmit                           // server → client: the server's proof, once the hello checks out
)

var frameNames = map[frameType]string{
	frameChallenge: "challenge", frameHello: "hello", frameReject: "reject", frameWelcome: "welcome",
	frameContribute: "contribute", frameResult: "result", frameQuery: "query", frameMissing: "missing",
	frameFailure: "failure", frameBye: "bye", frameAdmit: "admit",
}

func (t frameType) String() string {
	if s, ok := frameNames[t]; ok {
		return s
	}
	return fmt.Sprintf("frame type %d", byte(t))
}

// opKind is which collective a contribution belongs to.
type opKind byte

const (
	opAllGather opKind = 1
	opBarrier   opKind = 2
)

func (o opKind) String() string {
	switch o {
	case opAllGather:
		return "all-gather"
	case opBarrier:
		return "barrier"
	}
	return fmt.Sprintf("collective kind %d", byte(o))
}

// failCode says which sentinel a reject, failure or bye stands for.
type failCode byte

const (
	codeOK failCode = iota
	codeTimeout
	codePeer
	codeInvalid
	codeClosed
)

func (c failCode) sentinel() error {
	switch c {
	case codeTimeout:
		return hcerr.ErrTimeout
	case codeInvalid:
		return hcerr.ErrInvalidArgument
	case codeClosed:
		return hcerr.ErrClosed
	}
	return hcerr.ErrPeer
}

// errFrameTooLarge is a frame header announcing more than the reader accepts.
var errFrameTooLarge = errors.New("frame too large")

// errMalformed is a frame that does not parse.
var errMalformed = errors.New("malformed frame")

// readFrame reads one frame whose body may be at most limit bytes.
func readFrame(r io.Reader, limit uint64) (frameType, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 {
		return 0, nil, fmt.Errorf("%w: zero length", errMalformed)
	}
	t := frameType(hdr[4])
	if uint64(n-1) > limit {
		return 0, nil, fmt.Errorf("%w: %v of %d bytes, at most %d expected here", errFrameTooLarge, t, n-1, limit)
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return t, body, nil
}

// frame is an encoder: header first, body appended, length patched by bytes.
type frame []byte

func newFrame(t frameType, sizeHint int) frame {
	f := make(frame, 5, 5+sizeHint)
	f[4] = byte(t)
	return f
}

func (f frame) u8(v byte) frame     { return append(f, v) }
func (f frame) u32(v uint32) frame  { return binary.BigEndian.AppendUint32(f, v) }
func (f frame) u64(v uint64) frame  { return binary.BigEndian.AppendUint64(f, v) }
func (f frame) raw(b []byte) frame  { return append(f, b...) }
func (f frame) blob(b []byte) frame { return f.u32(uint32(len(b))).raw(b) }

// bytes finishes the frame.
func (f frame) bytes() []byte {
	binary.BigEndian.PutUint32(f[:4], uint32(len(f)-4))
	return f
}

// decoder reads a frame body; the first short read sticks in err.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%w: body ends %d bytes early", errMalformed, n-len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// blob reads a length-prefixed byte string of at most limit bytes.
func (d *decoder) blob(limit int) []byte {
	n := d.u32()
	if d.err == nil && uint64(n) > uint64(limit) {
		d.err = fmt.Errorf("%w: blob of %d bytes exceeds %d", errMalformed, n, limit)
	}
	return d.take(int(n))
}

// rest returns what is left of the body.
func (d *decoder) rest() []byte { return d.take(len(d.b)) }

// done reports the first error, or trailing bytes.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errMalformed, len(d.b))
	}
	return d.err
}

// hello is what a rank says about itself when it joins.
type hello struct {
	rank, size, localRank, localSize int
	nonce                            []byte // the client's challenge to the server
	mac                              []byte
}

func (h hello) fields(f frame) frame {
	return f.u32(uint32(h.rank)).u32(uint32(h.size)).u32(uint32(h.localRank)).u32(uint32(h.localSize))
}

// handshakeMAC is HMAC-SHA256 keyed by the token over a label, both nonces
// and the hello's fields: the client's proof ("hello"), the server's
// ("admit") and the session key ("session") differ by the label alone.
func handshakeMAC(label, token string, serverNonce []byte, h hello) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("hiercoll " + label + " v2\x00"))
	m.Write(serverNonce)
	m.Write(h.nonce)
	m.Write(h.fields(nil))
	return m.Sum(nil)
}

// helloMAC proves knowledge of the token to the server without sending it.
func helloMAC(token string, serverNonce []byte, h hello) []byte {
	return handshakeMAC("hello", token, serverNonce, h)
}

// admitProof is the server's proof of the token, over the client's nonce.
func admitProof(token string, serverNonce []byte, h hello) []byte {
	return handshakeMAC("admit", token, serverNonce, h)
}

func encodeChallenge(nonce []byte) []byte {
	return newFrame(frameChallenge, 6+nonceSize).raw([]byte(wireMagic)).u32(wireVersion).raw(nonce).bytes()
}

// checkVersion reads the magic and version that open a challenge and a hello.
func checkVersion(d *decoder, what string) error {
	magic, version := d.take(len(wireMagic)), d.u32()
	if d.err != nil {
		return d.err
	}
	if string(magic) != wireMagic {
		return fmt.Errorf("%w: not a hiercoll %s (magic %s)", errMalformed, what, hcerr.QuoteBytes(magic))
	}
	if version != wireVersion {
		return fmt.Errorf("%w: a %s of protocol version %d, this side speaks %d (mixed hiercoll versions?)", errMalformed, what, version, wireVersion)
	}
	return nil
}

func decodeChallenge(body []byte) (nonce []byte, err error) {
	d := decoder{b: body}
	if err := checkVersion(&d, "challenge"); err != nil {
		return nil, err
	}
	nonce = d.take(nonceSize)
	if err := d.done(); err != nil {
		return nil, err
	}
	return nonce, nil
}

func encodeHello(h hello) []byte {
	f := newFrame(frameHello, 8+16+nonceSize+macSize).raw([]byte(wireMagic)).u32(wireVersion)
	return h.fields(f).raw(h.nonce).raw(h.mac).bytes()
}

func decodeHello(body []byte) (hello, error) {
	d := decoder{b: body}
	if err := checkVersion(&d, "hello"); err != nil {
		return hello{}, err
	}
	h := hello{rank: int(d.u32()), size: int(d.u32()), localRank: int(d.u32()), localSize: int(d.u32())}
	h.nonce = d.take(nonceSize)
	h.mac = d.take(macSize)
	if err := d.done(); err != nil {
		return hello{}, err
	}
	return h, nil
}

func encodeAdmit(proof []byte) []byte { return newFrame(frameAdmit, macSize).raw(proof).bytes() }

func decodeAdmit(body []byte) ([]byte, error) {
	d := decoder{b: body}
	proof := d.take(macSize)
	return proof, d.done()
}

// direction says which way a tagged frame travels; it is part of the tag, so
// that a frame cannot be reflected back to its sender.
type direction byte

const (
	toServer direction = 'c'
	toClient direction = 's'
)

// session is the state of one admitted connection's tags, on either side.
type session struct {
	key            []byte
	send, recv     direction
	sent, received uint64 // frames tagged and verified so far
}

// newSession derives the session of a handshake; the server sends toClient.
func newSession(token string, serverNonce []byte, h hello, server bool) *session {
	s := &session{key: handshakeMAC("session", token, serverNonce, h), send: toServer, recv: toClient}
	if server {
		s.send, s.recv = s.recv, s.send
	}
	return s
}

// digest is what a frame's tag covers besides its number: the hash of its
// type and body.
type digest [sha256.Size]byte

// frameDigest hashes an encoded frame (header included; the length is not
// hashed, since the type and body determine it).
func frameDigest(f []byte) digest { return sha256.Sum256(f[4:]) }

func bodyDigest(t frameType, body []byte) digest {
	h := sha256.New()
	h.Write([]byte{byte(t)})
	h.Write(body)
	var d digest
	h.Sum(d[:0])
	return d
}

func (s *session) mac(dir direction, n uint64, d digest) []byte {
	m := hmac.New(sha256.New, s.key)
	var hdr [9]byte
	hdr[0] = byte(dir)
	binary.BigEndian.PutUint64(hdr[1:], n)
	m.Write(hdr[:])
	m.Write(d[:])
	return m.Sum(nil)
}

// tag returns the tag of the next frame this side sends. The caller sends
// frames in the order it tags them.
func (s *session) tag(d digest) []byte {
	t := s.mac(s.send, s.sent, d)
	s.sent++
	return t
}

// errForged is a frame whose tag does not check out.
var errForged = errors.New("frame fails authentication")

// verify checks the tag of the next frame received.
func (s *session) verify(t frameType, body, tag []byte) error {
	if !hmac.Equal(tag, s.mac(s.recv, s.received, bodyDigest(t, body))) {
		return fmt.Errorf("%w: %v number %d", errForged, t, s.received)
	}
	s.received++
	return nil
}

// readTagged reads one frame whose body may be at most limit bytes, and its
// tag, and verifies it.
func readTagged(r io.Reader, limit uint64, s *session) (frameType, []byte, error) {
	t, body, err := readFrame(r, limit)
	if err != nil {
		return 0, nil, err
	}
	tag := make([]byte, tagSize)
	if _, err := io.ReadFull(r, tag); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	if err := s.verify(t, body, tag); err != nil {
		return 0, nil, err
	}
	return t, body, nil
}

// report is the body of a reject, failure or bye: which sentinel, which
// ranks are to blame, and why.
type report struct {
	code   failCode
	ranks  []int
	reason string
}

func encodeReport(t frameType, r report) []byte {
	reason := r.reason
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	f := newFrame(t, 5+4*len(r.ranks)+len(reason)).u8(byte(r.code)).u32(uint32(len(r.ranks)))
	for _, rank := range r.ranks {
		f = f.u32(uint32(rank))
	}
	return f.raw([]byte(reason)).bytes()
}

func decodeReport(body []byte, size int) (report, error) {
	d := decoder{b: body}
	r := report{code: failCode(d.u8())}
	r.ranks = decodeRanks(&d, size)
	r.reason = string(d.rest())
	if len(r.reason) > maxReason {
		d.err = fmt.Errorf("%w: reason of %d bytes", errMalformed, len(r.reason))
	}
	return r, d.done()
}

func decodeRanks(d *decoder, size int) []int {
	n := d.u32()
	if d.err == nil && uint64(n) > uint64(size) {
		d.err = fmt.Errorf("%w: %d ranks in a world of %d", errMalformed, n, size)
		return nil
	}
	var ranks []int
	for range n {
		r := int(d.u32())
		if d.err == nil && r >= size {
			d.err = fmt.Errorf("%w: rank %d in a world of %d", errMalformed, r, size)
		}
		ranks = append(ranks, r)
	}
	return ranks
}

func reportLimit(size int) uint64 { return 5 + 4*uint64(size) + maxReason }

func encodeMissing(seq uint64, ranks []int) []byte {
	f := newFrame(frameMissing, 12+4*len(ranks)).u64(seq).u32(uint32(len(ranks)))
	for _, r := range ranks {
		f = f.u32(uint32(r))
	}
	return f.bytes()
}

func decodeMissing(body []byte, size int) (uint64, []int, error) {
	d := decoder{b: body}
	seq := d.u64()
	ranks := decodeRanks(&d, size)
	return seq, ranks, d.done()
}

func encodeContribute(seq uint64, op opKind, blob []byte) []byte {
	return newFrame(frameContribute, 9+len(blob)).u64(seq).u8(byte(op)).raw(blob).bytes()
}

func decodeContribute(body []byte) (seq uint64, op opKind, blob []byte, err error) {
	d := decoder{b: body}
	seq, op = d.u64(), opKind(d.u8())
	blob = d.rest()
	if d.err == nil && op != opAllGather && op != opBarrier {
		d.err = fmt.Errorf("%w: unknown %v", errMalformed, op)
	}
	if d.err == nil && len(blob) > MaxBlob {
		d.err = fmt.Errorf("%w: contribution of %d bytes exceeds %d", errMalformed, len(blob), MaxBlob)
	}
	return seq, op, blob, d.done()
}

// encodeResult is every rank's blob of one collective; a barrier carries none.
func encodeResult(seq uint64, op opKind, blobs [][]byte) []byte {
	n := 13
	for _, b := range blobs {
		n += 4 + len(b)
	}
	f := newFrame(frameResult, n).u64(seq).u8(byte(op)).u32(uint32(len(blobs)))
	for _, b := range blobs {
		f = f.blob(b)
	}
	return f.bytes()
}

func decodeResult(body []byte) (seq uint64, op opKind, blobs [][]byte, err error) {
	d := decoder{b: body}
	seq, op = d.u64(), opKind(d.u8())
	n := d.u32()
	if d.err == nil && uint64(n) > uint64(len(d.b))/4 {
		d.err = fmt.Errorf("%w: %d blobs in %d bytes", errMalformed, n, len(d.b))
	}
	if d.err == nil {
		blobs = make([][]byte, n)
		for i := range blobs {
			blobs[i] = d.blob(MaxBlob)
		}
	}
	return seq, op, blobs, d.done()
}

func encodeQuery(seq uint64) []byte { return newFrame(frameQuery, 8).u64(seq).bytes() }

func decodeQuery(body []byte) (uint64, error) {
	d := decoder{b: body}
	seq := d.u64()
	return seq, d.done()
}

func encodeWelcome(size int) []byte { return newFrame(frameWelcome, 4).u32(uint32(size)).bytes() }
