package bootstrap

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// Store is the part of a key-value store shared by a job's processes that
// DialStore needs: torch.distributed's store, etcd, a shared directory.
type Store interface {
	// Set publishes value under key.
	Set(ctx context.Context, key string, value []byte) error
	// Get returns key's value, waiting until some process has set it or ctx
	// is done.
	Get(ctx context.Context, key string) ([]byte, error)
}

// The keys DialStore uses, after its prefix. Rank 0 sets the secret first,
// the address last; the other ranks read the address first.
//
// The address value names the rendezvous it belongs to: its job nonce
// (JobNonce of the secret), a space, and host:port of rank 0's server; once
// the rendezvous has ended, rank 0 replaces it with the nonce, a space and
// "closed". So a rank that finds values of another rendezvous under its
// prefix (an address and a secret of two different ones, or those of one
// that has ended) recognises them, and waits for its own rank 0's values
// instead of joining another job's server.
const (
	StoreKeySecret = "secret" // the job's secret, from NewSecret
	StoreKeyAddr   = "addr"   // JobNonce(secret) + " " + host:port of rank 0's server, or + " closed"
)

// storeClosed is the address value's second field once the rendezvous it
// belongs to has ended.
const storeClosed = "closed"

// JobNonce names the rendezvous whose secret is secret, in the store's
// address value: 16 hex digits of an HMAC of the secret, so that the
// address and the secret read from a store can be told to belong together
// without the address revealing the secret.
func JobNonce(secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("hiercoll store rendezvous nonce v1"))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// storeAddr is the address value of the store, parsed.
type storeAddr struct {
	nonce, addr string
	closed      bool
}

func parseStoreAddr(v []byte) (storeAddr, error) {
	nonce, rest, ok := strings.Cut(string(v), " ")
	if !ok || len(nonce) != 16 || strings.Trim(nonce, "0123456789abcdef") != "" {
		return storeAddr{}, errors.New("not a job nonce, a space and host:port")
	}
	if rest == storeClosed {
		return storeAddr{nonce: nonce, closed: true}, nil
	}
	if err := checkAddr(rest, false); err != nil {
		return storeAddr{}, err
	}
	return storeAddr{nonce: nonce, addr: rest}, nil
}

// DialStore joins the world of cfg through a store every rank shares, so that
// no port has to be agreed on and no secret handed out beforehand:
//
//   - rank 0 makes a secret (NewSecret), listens on cfg.Addr (Listen; port 0
//     lets the kernel pick one), sets prefix+StoreKeySecret and then
//     prefix+StoreKeyAddr to the job nonce and the listener's real address,
//     and serves; once the rendezvous has ended it marks the address closed;
//   - the other ranks get prefix+StoreKeyAddr and prefix+StoreKeySecret,
//     waiting for rank 0 within the deadline, and connect. Values of another
//     rendezvous (a closed address, an address and a secret whose nonces
//     differ) are not joined: the rank waits for fresh ones, and its error
//     at the deadline says what it found.
//
// cfg.Addr matters on rank 0 only: a host the others reach it at, with port
// 0 ("10.1.2.3:0", MASTER_ADDR's host). cfg.Token, TokenFile and Listener
// must be empty. Use a prefix of its own for each rendezvous of the job
// ("hiercoll/1/", "hiercoll/2/", ...). Under a prefix that another job
// used, a rank other than 0 waits out a rendezvous that has ended, and
// redials when the server it read is gone and this job's rank 0 has
// published; rank 0 refuses the prefix while another job's rendezvous there
// still answers (a rank that started before it cannot tell that one from
// its own, and may have joined it). The wait for rank 0 and the rendezvous
// share ctx's deadline, or cfg.Timeout.
//
// A caller whose store lives in another language does the same in its own
// words: rank 0 calls NewSecret and Listen, publishes the secret and
// JobNonce(secret) + " " + Listener.Addr, and calls DialTCP with Token and
// Listener set; the others read them, check the nonce, and call DialTCP with
// Addr and Token set.
//
// The secret is as private as the store. torch's TCPStore has no access
// control: the secret keeps out a process that cannot read the store (one
// squatting on the port, or guessing), not one that can, which could upset
// torch.distributed through the store anyway.
func DialStore(ctx context.Context, store Store, prefix string, cfg TCPConfig) (Comm, error) {
	if cfg.Token != "" || cfg.TokenFile != "" || cfg.Listener != nil {
		return nil, fmt.Errorf("bootstrap: rank %d: DialStore makes the secret and the listener; the config must have neither: %w", cfg.Rank, hcerr.ErrInvalidArgument)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("bootstrap: rank %d: negative timeout %v: %w", cfg.Rank, cfg.Timeout, hcerr.ErrInvalidArgument)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	deadline, budget := opDeadline(ctx, cfg.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	keySecret, keyAddr := prefix+StoreKeySecret, prefix+StoreKeyAddr

	if cfg.Rank == 0 {
		if cfg.Size < 1 {
			return DialTCP(ctx, cfg) // refused there, with the reason
		}
		if err := refuseLiveRendezvous(ctx, store, keyAddr); err != nil {
			return nil, err
		}
		ln, err := Listen(cfg.Addr)
		if err != nil {
			return nil, err
		}
		cfg.Token, cfg.Listener = NewSecret(), ln
		nonce := JobNonce(cfg.Token)
		for _, kv := range []struct{ key, value string }{{keySecret, cfg.Token}, {keyAddr, nonce + " " + ln.Addr()}} {
			if err := store.Set(ctx, kv.key, []byte(kv.value)); err != nil {
				ln.Close()
				return nil, storeError(ctx, 0, fmt.Sprintf("cannot set %s in the store", kv.key), budget, err)
			}
		}
		comm, err := DialTCP(ctx, cfg)
		// Every rank has read the address (or the rendezvous failed): mark
		// it closed, so that a later rank of another job under this prefix
		// does not take it for its own. Best effort: a store that fails now
		// leaves values a later rank recognises as stale once their server
		// is gone, and this rendezvous's outcome stands.
		store.Set(context.WithoutCancel(ctx), keyAddr, []byte(nonce+" "+storeClosed))
		return comm, err
	}

	addr, secret, err := readStore(ctx, store, cfg.Rank, keyAddr, keySecret, budget)
	if err != nil {
		return nil, err
	}
	cfg.Addr, cfg.Token = addr, secret
	cfg.reread = func(ctx context.Context) (string, string, bool) { return rereadStore(ctx, store, keyAddr, keySecret) }
	return DialTCP(ctx, cfg)
}

// rereadStore reads the store's values again, once: the address and the
// secret if they belong together and their rendezvous is open.
func rereadStore(ctx context.Context, store Store, keyAddr, keySecret string) (string, string, bool) {
	v, err := store.Get(ctx, keyAddr)
	if err != nil {
		return "", "", false
	}
	at, err := parseStoreAddr(v)
	if err != nil || at.closed {
		return "", "", false
	}
	secret, err := store.Get(ctx, keySecret)
	if err != nil || JobNonce(string(secret)) != at.nonce {
		return "", "", false
	}
	return at.addr, string(secret), true
}

// storePeek bounds rank 0's look for an address already under its prefix,
// and storeProbe its probe of that address's server.
const (
	storePeek  = 50 * time.Millisecond
	storeProbe = time.Second
)

// refuseLiveRendezvous is rank 0's check, before it publishes, that its
// prefix does not name another job's rendezvous that is still open: an
// address not marked closed whose server still answers with a challenge.
// The other job's ranks may be joining it, and this job's could, before
// this rank's values replace it: the job is refused with an error saying
// so. An address whose server is gone (a job that was killed) is stale, and
// replaced.
func refuseLiveRendezvous(ctx context.Context, store Store, keyAddr string) error {
	peek, cancel := context.WithTimeout(ctx, storePeek)
	v, err := store.Get(peek, keyAddr)
	cancel()
	if err != nil {
		return nil // nothing there (a store that fails fails the sets that follow)
	}
	at, err := parseStoreAddr(v)
	if err != nil || at.closed || !serverAnswers(ctx, at.addr) {
		return nil
	}
	return &Error{Rank: 0, Op: "rendezvous", Err: hcerr.ErrInvalidArgument,
		Reason: fmt.Sprintf("the store's %s names another job's rendezvous (job %s) whose server at %s still answers: its ranks may be joining it; give each rendezvous a prefix of its own",
			keyAddr, at.nonce, hcerr.Quote(at.addr))}
}

// serverAnswers reports whether a rendezvous server answers at addr: it
// sends a challenge within storeProbe.
func serverAnswers(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: storeProbe}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(storeProbe))
	t, _, err := readFrame(conn, maxHandshakeFrame)
	return err == nil && t == frameChallenge
}

// storePoll is how often a rank that found another rendezvous's values
// under its prefix reads the store again (at most; it starts faster).
const storePoll = 200 * time.Millisecond

// readStore returns the address and the secret of this rank's rendezvous:
// values that belong together (the address's nonce is the secret's) and
// whose rendezvous has not ended. Values of another rendezvous are read
// again until rank 0 of this one replaces them, or the deadline passes.
func readStore(ctx context.Context, store Store, rank int, keyAddr, keySecret string, budget time.Duration) (string, string, error) {
	stale := "" // what the values of another rendezvous were, for the error at the deadline
	poll := 5 * time.Millisecond
	for {
		v, err := store.Get(ctx, keyAddr)
		if err != nil {
			if stale != "" && ctx.Err() != nil {
				return "", "", staleError(ctx, rank, budget, stale)
			}
			return "", "", storeError(ctx, rank, fmt.Sprintf("rank 0 did not publish its rendezvous address (%s) in the store", keyAddr), budget, err)
		}
		at, err := parseStoreAddr(v)
		if err != nil {
			return "", "", &Error{Rank: rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrInvalidArgument, Cause: err,
				Reason: fmt.Sprintf("the store's %s, %s, is not this library's rendezvous address", keyAddr, hcerr.QuoteBytes(v))}
		}
		if at.closed {
			stale = fmt.Sprintf("the values of a rendezvous that has ended (job %s)", at.nonce)
		} else {
			secret, err := store.Get(ctx, keySecret)
			if err != nil {
				return "", "", storeError(ctx, rank, fmt.Sprintf("rank 0 did not publish the job's secret (%s) in the store", keySecret), budget, err)
			}
			if len(secret) == 0 || len(secret) > maxSecretFile {
				return "", "", &Error{Rank: rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrInvalidArgument,
					Reason: fmt.Sprintf("the store's %s holds %d bytes, not a secret", keySecret, len(secret))}
			}
			n := JobNonce(string(secret))
			if n == at.nonce {
				return at.addr, string(secret), nil
			}
			// Rank 0 of a newer rendezvous is between its two sets, or
			// these are two other jobs' values.
			stale = fmt.Sprintf("an address of job %s and a secret of job %s, values of two different rendezvous", at.nonce, n)
		}
		select {
		case <-time.After(poll):
			poll = min(2*poll, storePoll)
		case <-ctx.Done():
			return "", "", staleError(ctx, rank, budget, stale)
		}
	}
}

// staleError is readStore at its deadline (or cancelled) having found only
// another rendezvous's values.
func staleError(ctx context.Context, rank int, budget time.Duration, stale string) error {
	e := &Error{Rank: rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrTimeout,
		Reason: fmt.Sprintf("rank 0 did not publish this rendezvous's values within %v; the store holds %s (another job's values under the same prefix: give each rendezvous a prefix of its own)",
			roundDur(budget), stale)}
	if errors.Is(ctx.Err(), context.Canceled) {
		e.Err, e.Ranks = context.Canceled, nil
	}
	return e
}

// storeError is a failed store operation of the rendezvous: a timeout when
// the deadline passed (naming rank 0, whose values never came), else the
// store's own failure.
func storeError(ctx context.Context, rank int, what string, budget time.Duration, err error) error {
	e := &Error{Rank: rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrPeer, Cause: err, Reason: what}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Err, e.Reason = hcerr.ErrTimeout, fmt.Sprintf("%s within %v", what, roundDur(budget))
	case errors.Is(err, context.Canceled):
		e.Err, e.Ranks = context.Canceled, nil
	}
	if rank == 0 {
		e.Ranks = nil
	}
	return e
}
