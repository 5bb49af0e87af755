package bootstrap

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// DefaultTimeout bounds the rendezvous and each collective of a TCP Comm
// whose context has no deadline.
const DefaultTimeout = 60 * time.Second

// TCPConfig says who this process is in a multi-process world, where rank
// 0's rendezvous server listens and what secret the job's ranks share.
//
// The secret is Token, or for a job on one host TokenFile: exactly one of
// them is set. Every rank proves it holds the secret, and so does the server,
// so that neither a stranger joining nor a stranger squatting on Addr can
// take part.
type TCPConfig struct {
	Rank, Size, LocalRank, LocalSize int

	// Addr is host:port of rank 0's server; rank 0 listens there, unless
	// Listener is set.
	Addr string
	// Token is the per-job secret every rank must present: the same on every
	// rank, and hard to guess (NewSecret makes one).
	Token string
	// TokenFile, instead of Token, shares a secret among the ranks of a job
	// on one host: rank 0 makes a fresh one with NewSecret and writes it to
	// this file (mode 0600 in a directory of mode 0700, both checked to be
	// this user's) before its server answers anyone, and removes it once
	// every rank has joined or the rendezvous has failed; the other ranks
	// read it once the server answers. EnvConfig picks the path.
	TokenFile string
	// Listener, on rank 0 only: serve on this listener from Listen instead
	// of listening on Addr (which may then be empty). DialTCP takes it over,
	// also when it fails.
	Listener *Listener
	// Timeout bounds connecting and each collective when ctx has no
	// deadline; 0 means DefaultTimeout.
	Timeout time.Duration

	// reread, where set (DialStore), gives the address and the secret as
	// they are now, when a dial failed: values read from a store may be
	// those of a job whose server is gone, until this job's rank 0
	// replaces them.
	reread func(ctx context.Context) (addr, token string, ok bool)
}

func (cfg TCPConfig) check() (TCPConfig, error) {
	bad := func(format string, args ...any) (TCPConfig, error) {
		return TCPConfig{}, fmt.Errorf("bootstrap: TCP config of rank %d: %s: %w", cfg.Rank, fmt.Sprintf(format, args...), hcerr.ErrInvalidArgument)
	}
	switch {
	case cfg.Size < 1 || cfg.Size > maxWorld:
		return bad("world size %d is not in [1, %d]", cfg.Size, maxWorld)
	case cfg.Rank < 0 || cfg.Rank >= cfg.Size:
		return bad("rank %d is not in [0, %d)", cfg.Rank, cfg.Size)
	case cfg.LocalSize < 1 || cfg.Size%cfg.LocalSize != 0:
		return bad("local world size %d does not divide world size %d", cfg.LocalSize, cfg.Size)
	case cfg.LocalRank != cfg.Rank%cfg.LocalSize:
		return bad("local rank %d is not rank %d mod local world size %d (ranks are node-major)", cfg.LocalRank, cfg.Rank, cfg.LocalSize)
	case cfg.Token == "" && cfg.TokenFile == "":
		return bad("empty token")
	case cfg.Token != "" && cfg.TokenFile != "":
		return bad("both a token and a token file")
	case cfg.Timeout < 0:
		return bad("negative timeout %v", cfg.Timeout)
	case cfg.Listener != nil && cfg.Rank != 0:
		return bad("only rank 0 serves the rendezvous, on a Listener")
	}
	if cfg.Listener == nil {
		if err := checkAddr(cfg.Addr, cfg.Rank == 0); err != nil {
			return bad("server %v", err)
		}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	return cfg, nil
}

// Error is a failed rendezvous or collective of a TCP Comm (of a Local one
// too, when ranks never arrived): which rank saw it, in which operation,
// and which ranks are to blame. errors.Is matches
// Err (hcerr.ErrTimeout, ErrPeer, ErrInvalidArgument or ErrClosed, or
// context.Canceled) and Cause (the network or context error), if any.
type Error struct {
	Rank   int    // the rank reporting
	Op     string // "rendezvous", "all-gather 7", "barrier 8", "close"
	Ranks  []int  // the ranks that never arrived, dropped out or misbehaved
	Reason string
	Err    error
	Cause  error

	bye *report // what to tell the server on the way out, when the failure was seen here first
}

func (e *Error) Error() string {
	s := fmt.Sprintf("bootstrap: rank %d: %s: %s", e.Rank, e.Op, e.Reason)
	// A context deadline says no more than "timed out" does.
	if e.Cause != nil && !(e.Err == hcerr.ErrTimeout && errors.Is(e.Cause, context.DeadlineExceeded)) {
		s += ": " + e.Cause.Error()
		if errors.Is(e.Cause, e.Err) {
			return s // it named the sentinel already
		}
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// DialTCP joins the world described by cfg and returns this rank's Comm once
// every rank has joined. Rank 0 first starts the rendezvous server on
// cfg.Addr (or cfg.Listener); then every rank, rank 0 included, connects to
// it (retrying until the deadline, since rank 0 may start last), proves it
// holds the job's secret, checks that the server holds it too, and waits for
// the others. If some never arrive, the error wraps hcerr.ErrTimeout and
// names them. A server that cannot prove it holds the secret (another
// process listening on the port) is refused with an error naming its
// address that wraps hcerr.ErrPeer.
//
// The Comm's methods are for one goroutine at a time, except Close. After a
// failed collective the Comm is broken for good (the others have been told),
// so a job should end rather than retry. Rank 0's Close waits up to the
// timeout for the other ranks to close theirs, since its process serves them.
func DialTCP(ctx context.Context, cfg TCPConfig) (Comm, error) {
	c, err := dialTCP(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// dialTCP is DialTCP; rank 0 serves on ln when it is not nil (tests pass a
// listener on port 0 so that no port has to be guessed).
func dialTCP(ctx context.Context, cfg TCPConfig, ln net.Listener) (*tcpComm, error) {
	if cfg.Listener != nil && ln == nil {
		if !cfg.Listener.taken.CompareAndSwap(false, true) {
			return nil, fmt.Errorf("bootstrap: rank %d: the Listener on %s was closed, or passed to DialTCP before: %w", cfg.Rank, cfg.Listener.Addr(), hcerr.ErrInvalidArgument)
		}
		ln = cfg.Listener.ln
	}
	cfg, err := cfg.check()
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	deadline, budget := opDeadline(ctx, cfg.Timeout)
	addr := cfg.Addr
	var srv *server
	if cfg.Rank == 0 {
		if ln == nil {
			if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
				return nil, &Error{Rank: 0, Op: "rendezvous", Err: hcerr.ErrInvalidArgument, Cause: err,
					Reason: fmt.Sprintf("cannot serve the rendezvous on %s (another job on that port? %s picks another)", cfg.Addr, EnvPort)}
			}
		}
		if cfg.TokenFile != "" {
			// A fresh secret, shared through the file before anyone is
			// answered; once every rank has joined (or the rendezvous has
			// failed) nobody needs it.
			path := cfg.TokenFile
			cfg.Token, cfg.TokenFile = NewSecret(), ""
			if cfg.Size > 1 {
				if err := writeSecretFile(path, cfg.Token); err != nil {
					ln.Close()
					return nil, &Error{Rank: 0, Op: "rendezvous", Err: hcerr.ErrInvalidArgument, Cause: err,
						Reason: fmt.Sprintf("cannot share the job's secret with the other ranks (set %s to the same random value on every rank instead)", EnvToken)}
				}
				defer os.Remove(path)
			}
		}
		srv = startServer(ln, cfg.Size, cfg.LocalSize, cfg.Token, cfg.Timeout)
		addr = dialable(ln.Addr())
	}
	c, err := join(ctx, cfg, addr, deadline, budget)
	if err != nil {
		if srv != nil {
			// Tell the ranks already waiting why the job will not start.
			var final *report
			if e := (*Error)(nil); errors.As(err, &e) {
				final = &report{code: codeOf(e.Err), ranks: e.Ranks, reason: "rank 0 gave up: " + e.Reason}
			}
			srv.shutdown(final, min(time.Second, cfg.Timeout))
		}
		return nil, err
	}
	c.srv = srv
	return c, nil
}

// maxHost is the longest host an address may name: a DNS name's most.
const maxHost = 253

// checkAddr checks host:port before it is listened on or dialled: a port
// number in [1, 65535] (to listen on, [0, 65535]: 0 lets the kernel pick)
// and a host of at most maxHost bytes, so that an address that cannot work
// is refused at once instead of retried until the timeout.
func checkAddr(addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		reason := err.Error()
		if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
			reason = ae.Err // without the address, which is quoted cut short
		}
		return fmt.Errorf("address %s: %s", hcerr.Quote(addr), reason)
	}
	if len(host) > maxHost {
		return fmt.Errorf("address %s: a host name of %d bytes (at most %d)", hcerr.Quote(addr), len(host), maxHost)
	}
	lo := 1
	if listen {
		lo = 0
	}
	if n, err := strconv.Atoi(port); err != nil || n < lo || n > 65535 {
		return fmt.Errorf("address %s: port %s is not a number in [%d, 65535]", hcerr.Quote(addr), hcerr.Quote(port), lo)
	}
	return nil
}

// dialable turns a listener's address into one this host can connect to.
func dialable(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
}

func opDeadline(ctx context.Context, timeout time.Duration) (time.Time, time.Duration) {
	now := time.Now()
	if d, ok := ctx.Deadline(); ok {
		return d, d.Sub(now)
	}
	return now.Add(timeout), timeout
}

func codeOf(sentinel error) failCode {
	switch sentinel {
	case hcerr.ErrTimeout:
		return codeTimeout
	case hcerr.ErrInvalidArgument:
		return codeInvalid
	case hcerr.ErrClosed:
		return codeClosed
	}
	return codePeer
}

// tcpComm is one rank's connection to the rendezvous. A reader goroutine
// turns the server's frames into inbound values; a collective writes its
// contribution and waits for its result, a failure, or its deadline.
//
// After any failure the Comm is broken: collectives return that failure, and
// the server has been told (a bye carrying the reason) or has told us.
type tcpComm struct {
	rank, size, localRank, localSize int
	timeout                          time.Duration
	addr                             string
	token, tokenFile                 string                                                  // the job's secret, or where to read it
	secretRead                       bool                                                    // the secret file was there at some attempt
	reread                           func(ctx context.Context) (addr, token string, ok bool) // TCPConfig.reread

	conn       net.Conn
	sess       *session // tags what it sends (under writeMu) and checks what it reads (in readLoop)
	frames     chan inbound
	stop       chan struct{} // closed when the connection is abandoned
	readerDone chan struct{}
	writeMu    sync.Mutex

	seq    uint64
	broken error
	closed atomic.Bool

	abandonOnce, closeOnce sync.Once
	srv                    *server // rank 0 only
}

type inbound struct {
	t    frameType
	body []byte
	err  error
}

func (c *tcpComm) Rank() int      { return c.rank }
func (c *tcpComm) Size() int      { return c.size }
func (c *tcpComm) LocalRank() int { return c.localRank }
func (c *tcpComm) LocalSize() int { return c.localSize }

func join(ctx context.Context, cfg TCPConfig, addr string, deadline time.Time, budget time.Duration) (*tcpComm, error) {
	c := &tcpComm{
		rank: cfg.Rank, size: cfg.Size, localRank: cfg.LocalRank, localSize: cfg.LocalSize,
		timeout: cfg.Timeout, addr: addr, token: cfg.Token, tokenFile: cfg.TokenFile, reread: cfg.reread,
		frames: make(chan inbound, 4), stop: make(chan struct{}), readerDone: make(chan struct{}),
	}
	conn, sess, err := c.connect(ctx, deadline, budget)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	c.conn, c.sess = conn, sess
	go c.readLoop()
	if _, err := c.await(ctx, 0, "rendezvous", joinSeq, deadline, budget); err != nil {
		return nil, c.fail(err)
	}
	return c, nil
}

// connect dials rank 0's server until a handshake with it succeeds, it
// refuses this rank, it fails to prove it holds the job's secret, or the
// deadline passes.
func (c *tcpComm) connect(ctx context.Context, deadline time.Time, budget time.Duration) (net.Conn, *session, error) {
	const op = "rendezvous"
	backoff := 10 * time.Millisecond
	var lastErr, noFile error // noFile: the server answered, the secret file was not there
	for {
		dialCtx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := (&net.Dialer{}).DialContext(dialCtx, "tcp", c.addr)
		cancel()
		if err == nil {
			var sess *session
			var fatal error
			sess, fatal, err = c.handshake(ctx, conn, deadline)
			if err == nil && fatal == nil {
				return conn, sess, nil
			}
			conn.Close()
			if fatal != nil {
				return nil, nil, fatal
			}
		}
		lastErr = err
		if errors.Is(err, fs.ErrNotExist) {
			noFile = err
		}
		if c.reread != nil {
			if addr, token, ok := c.reread(ctx); ok && checkAddr(addr, false) == nil {
				c.addr, c.token = addr, token // this job's rank 0 has replaced stale values
			}
		}
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, &Error{Rank: c.rank, Op: op, Err: ctx.Err(),
				Reason: fmt.Sprintf("cancelled while connecting to rank 0's server at %s", c.addr)}
		}
		wait := min(backoff, time.Until(deadline))
		if wait <= 0 {
			reason := fmt.Sprintf("rank 0's server at %s did not answer within %v", c.addr, roundDur(budget))
			if noFile != nil && !c.secretRead {
				lastErr = noFile
				reason = fmt.Sprintf("the server at %s answered, but rank 0's secret file %s did not appear within %v "+
					"(rank 0 writes it when it runs on this host; ranks on several hosts need %s)", c.addr, c.tokenFile, roundDur(budget), EnvToken)
			}
			return nil, nil, &Error{Rank: c.rank, Op: op, Ranks: []int{0}, Err: hcerr.ErrTimeout, Cause: lastErr, Reason: reason}
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// handshake runs the client's side of the handshake on a fresh connection:
// challenge, hello, admit. It returns the session, or a fatal error (the
// server refused this rank, or is not this job's), or an error worth
// retrying on a new connection (the connection broke, or the secret file is
// not there yet).
func (c *tcpComm) handshake(ctx context.Context, conn net.Conn, deadline time.Time) (sess *session, fatal, retry error) {
	const op = "rendezvous"
	notServer := func(err error) error {
		return &Error{Rank: c.rank, Op: op, Ranks: []int{0}, Err: hcerr.ErrInvalidArgument, Cause: err,
			Reason: fmt.Sprintf("%s is not a hiercoll rendezvous server", c.addr)}
	}
	conn.SetDeadline(deadline)
	stop := watch(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	t, body, err := readFrame(conn, maxHandshakeFrame)
	if err == nil && t != frameChallenge {
		err = fmt.Errorf("%w: it opened with a %v", errMalformed, t)
	}
	var serverNonce []byte
	if err == nil {
		serverNonce, err = decodeChallenge(body)
	}
	if err != nil {
		if errors.Is(err, errMalformed) || errors.Is(err, errFrameTooLarge) {
			return nil, notServer(err), nil
		}
		return nil, nil, err
	}
	token := c.token
	if token == "" {
		// Read once the server answers: rank 0 wrote it before serving.
		if token, err = readSecretFile(c.tokenFile); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, err
			}
			return nil, &Error{Rank: c.rank, Op: op, Err: hcerr.ErrInvalidArgument, Cause: err,
				Reason: fmt.Sprintf("cannot read the job's secret from %s", c.tokenFile)}, nil
		}
		c.secretRead = true
	}
	h := hello{rank: c.rank, size: c.size, localRank: c.localRank, localSize: c.localSize, nonce: make([]byte, nonceSize)}
	rand.Read(h.nonce)
	h.mac = helloMAC(token, serverNonce, h)
	if _, err := conn.Write(encodeHello(h)); err != nil {
		return nil, nil, err
	}
	t, body, err = readFrame(conn, max(maxHandshakeFrame, reportLimit(c.size)))
	if err != nil {
		if errors.Is(err, errMalformed) || errors.Is(err, errFrameTooLarge) {
			return nil, notServer(err), nil
		}
		return nil, nil, err
	}
	impostor := func(why string, cause error) error {
		return &Error{Rank: c.rank, Op: op, Err: hcerr.ErrPeer, Cause: cause,
			Reason: fmt.Sprintf("the server at %s %s: it is not this job's rank 0 (another process listening on that port?)", c.addr, why)}
	}
	switch t {
	case frameAdmit:
		proof, err := decodeAdmit(body)
		if err != nil {
			return nil, impostor("sent a malformed proof of the job's secret", err), nil
		}
		if !hmac.Equal(proof, admitProof(token, serverNonce, h)) {
			return nil, impostor("failed to prove it holds the job's secret", nil), nil
		}
		return newSession(token, serverNonce, h, false), nil, nil
	case frameReject:
		rep, err := decodeReport(body, c.size)
		if err != nil {
			return nil, notServer(err), nil
		}
		return nil, &Error{Rank: c.rank, Op: op, Ranks: rep.ranks, Err: rep.code.sentinel(),
			Reason: fmt.Sprintf("rank 0's server at %s rejected rank %d: %s", c.addr, c.rank, rep.reason)}, nil
	}
	return nil, impostor(fmt.Sprintf("answered the hello with a %v instead of proving it holds the job's secret", t), nil), nil
}

// watch runs undo as soon as ctx is done; the returned stop unlinks it and
// waits for an undo already under way.
func watch(ctx context.Context, undo func()) (stop func()) {
	fired := make(chan struct{})
	unlink := context.AfterFunc(ctx, func() { undo(); close(fired) })
	return func() {
		if !unlink() {
			<-fired
		}
	}
}

func (c *tcpComm) readLoop() {
	defer close(c.readerDone)
	limit := max(13+uint64(c.size)*(4+MaxBlob), reportLimit(c.size))
	for {
		t, body, err := readTagged(c.conn, limit, c.sess)
		select {
		case c.frames <- inbound{t, body, err}:
		case <-c.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// write sends one frame, bounded by deadline and ctx.
func (c *tcpComm) write(ctx context.Context, f []byte, deadline time.Time) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.conn.SetWriteDeadline(deadline)
	stop := watch(ctx, func() { c.conn.SetWriteDeadline(time.Unix(1, 0)) })
	err := c.send(f)
	stop()
	return err
}

// send writes an encoded frame and its tag. Called with writeMu held.
func (c *tcpComm) send(f []byte) error {
	bufs := net.Buffers{f, c.sess.tag(frameDigest(f))}
	_, err := bufs.WriteTo(c.conn)
	return err
}

// AllGather implements Comm.
func (c *tcpComm) AllGather(ctx context.Context, blob []byte) ([][]byte, error) {
	return c.collective(ctx, opAllGather, blob)
}

// Barrier implements Comm.
func (c *tcpComm) Barrier(ctx context.Context) error {
	_, err := c.collective(ctx, opBarrier, nil)
	return err
}

func (c *tcpComm) collective(ctx context.Context, op opKind, blob []byte) ([][]byte, error) {
	name := fmt.Sprintf("%v %d", op, c.seq)
	switch {
	case c.closed.Load():
		return nil, &Error{Rank: c.rank, Op: name, Reason: "the communicator is closed", Err: hcerr.ErrClosed}
	case c.broken != nil:
		return nil, fmt.Errorf("bootstrap: rank %d: %s: the communicator failed earlier: %w", c.rank, name, c.broken)
	case len(blob) > MaxBlob:
		return nil, &Error{Rank: c.rank, Op: name, Err: hcerr.ErrInvalidArgument,
			Reason: fmt.Sprintf("blob of %d bytes exceeds MaxBlob (%d)", len(blob), MaxBlob)}
	case ctx.Err() != nil:
		// Nothing was sent: the Comm stays usable.
		return nil, &Error{Rank: c.rank, Op: name, Err: ctxSentinel(ctx.Err()), Cause: ctx.Err(), Reason: "the context was done before it started"}
	}
	seq := c.seq
	c.seq++
	deadline, budget := opDeadline(ctx, c.timeout)
	if err := c.write(ctx, encodeContribute(seq, op, blob), deadline); err != nil {
		switch {
		case ctx.Err() != nil:
			err = c.ctxErr(ctx, name, budget, nil, false)
		case errors.Is(err, os.ErrDeadlineExceeded):
			err = &Error{Rank: c.rank, Op: name, Ranks: []int{0}, Err: hcerr.ErrTimeout, Cause: err,
				Reason: fmt.Sprintf("could not send the contribution to rank 0's server within %v", roundDur(budget))}
		default:
			err = c.lost(name, err)
		}
		return nil, c.fail(err)
	}
	blobs, err := c.await(ctx, op, name, seq, deadline, budget)
	if err != nil {
		return nil, c.fail(err)
	}
	return blobs, nil
}

// await waits for the answer to seq (joinSeq: the welcome). Shortly before
// the deadline it asks the server which ranks are still missing, so that a
// timeout can name them.
func (c *tcpComm) await(ctx context.Context, op opKind, name string, seq uint64, deadline time.Time, budget time.Duration) ([][]byte, error) {
	margin := min(max(budget/5, time.Millisecond), time.Second)
	ask := time.NewTimer(time.Until(deadline) - margin)
	defer ask.Stop()
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	var missing []int
	answered := false
	for {
		select {
		case in := <-c.frames:
			if errors.Is(in.err, errForged) {
				return nil, &Error{Rank: c.rank, Op: name, Err: hcerr.ErrPeer, Cause: in.err,
					Reason: fmt.Sprintf("a frame from the server at %s fails authentication (altered on the way, or not from this job's rank 0)", c.addr)}
			}
			if in.err != nil {
				return nil, c.lost(name, in.err)
			}
			switch in.t {
			case frameWelcome:
				if seq == joinSeq {
					return nil, nil
				}
			case frameResult:
				gotSeq, gotOp, blobs, err := decodeResult(in.body)
				if err == nil && seq != joinSeq && gotSeq == seq && gotOp == op && (op == opBarrier || len(blobs) == c.size) {
					return blobs, nil
				}
			case frameMissing:
				if gotSeq, ranks, err := decodeMissing(in.body, c.size); err == nil {
					// An answer can trail the result it raced with: only
					// this collective's counts.
					if gotSeq == seq {
						missing, answered = ranks, true
					}
					continue
				}
			case frameFailure:
				if rep, err := decodeReport(in.body, c.size); err == nil {
					return nil, &Error{Rank: c.rank, Op: name, Ranks: rep.ranks, Reason: rep.reason, Err: rep.code.sentinel()}
				}
			}
			return nil, &Error{Rank: c.rank, Op: name, Ranks: []int{0}, Err: hcerr.ErrPeer,
				Reason: fmt.Sprintf("rank 0's server sent an unexpected or malformed %v", in.t)}
		case <-ask.C:
			// A failed send shows up as a lost connection or the deadline.
			c.write(ctx, encodeQuery(seq), deadline)
		case <-expire.C:
			return nil, c.timeoutErr(name, budget, missing, answered, nil)
		case <-ctx.Done():
			return nil, c.ctxErr(ctx, name, budget, missing, answered)
		case <-c.stop:
			return nil, &Error{Rank: c.rank, Op: name, Reason: "the communicator was closed while it waited", Err: hcerr.ErrClosed}
		}
	}
}

func (c *tcpComm) timeoutErr(name string, budget time.Duration, missing []int, answered bool, cause error) error {
	e := &Error{Rank: c.rank, Op: name, Ranks: missing, Err: hcerr.ErrTimeout, Cause: cause}
	switch {
	case len(missing) > 0:
		e.Reason = fmt.Sprintf("%s never arrived within %v", rankList(missing), roundDur(budget))
	case answered:
		e.Reason = fmt.Sprintf("every rank had arrived, yet no answer came within %v", roundDur(budget))
	default:
		e.Reason = fmt.Sprintf("no answer within %v, and rank 0's server did not say which ranks were missing", roundDur(budget))
	}
	e.bye = &report{code: codeTimeout, ranks: missing, reason: e.Reason}
	return e
}

func (c *tcpComm) ctxErr(ctx context.Context, name string, budget time.Duration, missing []int, answered bool) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return c.timeoutErr(name, budget, missing, answered, ctx.Err())
	}
	return &Error{Rank: c.rank, Op: name, Err: ctx.Err(), Reason: "cancelled",
		bye: &report{code: codePeer, ranks: []int{c.rank}, reason: fmt.Sprintf("its %s was cancelled", name)}}
}

func (c *tcpComm) lost(name string, err error) error {
	return &Error{Rank: c.rank, Op: name, Ranks: []int{0}, Err: hcerr.ErrPeer, Cause: err,
		Reason: fmt.Sprintf("lost the connection to rank 0's server at %s", c.addr)}
}

func ctxSentinel(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return hcerr.ErrTimeout
	}
	return err
}

// fail breaks the Comm with err: the server hears why (when the failure was
// seen here first) and the connection is closed.
func (c *tcpComm) fail(err error) error {
	c.broken = err
	var bye *report
	if e := (*Error)(nil); errors.As(err, &e) {
		bye = e.bye
	}
	c.abandon(bye)
	return err
}

func (c *tcpComm) abandon(bye *report) {
	c.abandonOnce.Do(func() {
		// TryLock: a Close racing a collective's send does not wait for it.
		if bye != nil && c.writeMu.TryLock() {
			c.conn.SetWriteDeadline(time.Now().Add(min(time.Second, c.timeout)))
			c.send(encodeReport(frameBye, *bye))
			c.writeMu.Unlock()
		}
		close(c.stop)
		c.conn.Close()
		<-c.readerDone
	})
}

// Close says goodbye to the server and closes the connection. On rank 0 it
// then stops the server, waiting up to the timeout for the other ranks to
// close first, so that none is cut off before it has read its last result.
// It returns an error only when rank 0 had to cut ranks off.
func (c *tcpComm) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		c.abandon(&report{code: codeOK})
		if c.srv != nil {
			if stayed := c.srv.shutdown(nil, c.timeout); len(stayed) > 0 {
				err = &Error{Rank: c.rank, Op: "close", Ranks: stayed, Err: hcerr.ErrTimeout,
					Reason: fmt.Sprintf("%s still connected %v later; cut off", rankList(stayed), roundDur(c.timeout))}
			}
		}
	})
	return err
}

// rankList names ranks for a message: "rank 3", "ranks 2, 3".
func rankList(ranks []int) string {
	const show = 16
	parts := make([]string, 0, min(len(ranks), show))
	for _, r := range ranks[:min(len(ranks), show)] {
		parts = append(parts, strconv.Itoa(r))
	}
	s := strings.Join(parts, ", ")
	if len(ranks) > show {
		s += fmt.Sprintf(", … (%d in all)", len(ranks))
	}
	if len(ranks) == 1 {
		return "rank " + s
	}
	return "ranks " + s
}

func roundDur(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Listener is rank 0's rendezvous socket, opened before the Comm so that its
// real address can be published (a port picked by the kernel, for example)
// before the ranks connect. See Listen, and DialStore for its use.
type Listener struct {
	ln    net.Listener
	taken atomic.Bool // closed, or passed to DialTCP, which owns it from then on
}

// Listen opens rank 0's rendezvous socket on addr, "host:port". Port 0 lets
// the kernel pick a free one. Use a host the other ranks reach this one at
// (MASTER_ADDR, say): Addr reports it with the real port; an unspecified
// host (":0") is reported as localhost, good for one host only.
//
// Pass the Listener as TCPConfig.Listener to rank 0's DialTCP, which serves
// on it and owns it from then on; Close it only if it is never passed.
func Listen(addr string) (*Listener, error) {
	if err := checkAddr(addr, true); err != nil {
		return nil, &Error{Rank: 0, Op: "rendezvous", Err: hcerr.ErrInvalidArgument, Reason: fmt.Sprintf("cannot serve the rendezvous: %v", err)}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &Error{Rank: 0, Op: "rendezvous", Err: hcerr.ErrInvalidArgument, Cause: err,
			Reason: fmt.Sprintf("cannot serve the rendezvous on %s", addr)}
	}
	return &Listener{ln: ln}, nil
}

// Addr is the address the other ranks connect to, with the real port.
func (l *Listener) Addr() string { return dialable(l.ln.Addr()) }

// Close closes a Listener that was never passed to DialTCP; after that it
// does nothing.
func (l *Listener) Close() error {
	if !l.taken.CompareAndSwap(false, true) {
		return nil
	}
	return l.ln.Close()
}
