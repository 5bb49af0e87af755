package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
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
const (
	StoreKeySecret = "secret" // the job's secret, from NewSecret
	StoreKeyAddr   = "addr"   // host:port of rank 0's rendezvous server
)

// DialStore joins the world of cfg through a store every rank shares, so that
// no port has to be agreed on and no secret handed out beforehand:
//
//   - rank 0 makes a secret (NewSecret), listens on cfg.Addr (Listen; port 0
//     lets the kernel pick one), sets prefix+StoreKeySecret and then
//     prefix+StoreKeyAddr to the listener's real address, and serves;
//   - the other ranks get prefix+StoreKeyAddr and prefix+StoreKeySecret,
//     waiting for rank 0 within the deadline, and connect.
//
// cfg.Addr matters on rank 0 only: a host the others reach it at, with port
// 0 ("10.1.2.3:0", MASTER_ADDR's host). cfg.Token, TokenFile and Listener
// must be empty. Use a prefix of its own for each rendezvous of the job
// ("hiercoll/1/", "hiercoll/2/", ...), so that none reads the values of an
// earlier one. The wait for rank 0 and the rendezvous share ctx's deadline,
// or cfg.Timeout.
//
// A caller whose store lives in another language does the same in its own
// words: rank 0 calls NewSecret and Listen, publishes the secret and
// Listener.Addr, and calls DialTCP with Token and Listener set; the others
// read them and call DialTCP with Addr and Token set.
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
		ln, err := Listen(cfg.Addr)
		if err != nil {
			return nil, err
		}
		cfg.Token, cfg.Listener = NewSecret(), ln
		for _, kv := range []struct{ key, value string }{{keySecret, cfg.Token}, {keyAddr, ln.Addr()}} {
			if err := store.Set(ctx, kv.key, []byte(kv.value)); err != nil {
				ln.Close()
				return nil, storeError(ctx, 0, fmt.Sprintf("cannot set %s in the store", kv.key), budget, err)
			}
		}
		return DialTCP(ctx, cfg)
	}

	addr, err := store.Get(ctx, keyAddr)
	if err != nil {
		return nil, storeError(ctx, cfg.Rank, fmt.Sprintf("rank 0 did not publish its rendezvous address (%s) in the store", keyAddr), budget, err)
	}
	if _, _, err := net.SplitHostPort(string(addr)); err != nil {
		return nil, &Error{Rank: cfg.Rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrInvalidArgument, Cause: err,
			Reason: fmt.Sprintf("the store's %s, %q, is not host:port", keyAddr, addr)}
	}
	secret, err := store.Get(ctx, keySecret)
	if err != nil {
		return nil, storeError(ctx, cfg.Rank, fmt.Sprintf("rank 0 did not publish the job's secret (%s) in the store", keySecret), budget, err)
	}
	if len(secret) == 0 || len(secret) > maxSecretFile {
		return nil, &Error{Rank: cfg.Rank, Op: "rendezvous", Ranks: []int{0}, Err: hcerr.ErrInvalidArgument,
			Reason: fmt.Sprintf("the store's %s holds %d bytes, not a secret", keySecret, len(secret))}
	}
	cfg.Addr, cfg.Token = string(addr), string(secret)
	return DialTCP(ctx, cfg)
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
