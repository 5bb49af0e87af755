package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
	"github.com/stretchr/testify/require"
)

// memStore is a store of one process: a map behind a mutex, and a blocking
// Get.
type memStore struct {
	mu      sync.Mutex
	values  map[string][]byte
	firsts  map[string][]byte // each key's first value
	changed chan struct{}     // closed and replaced on every Set
}

func newMemStore() *memStore {
	return &memStore{values: map[string][]byte{}, firsts: map[string][]byte{}, changed: make(chan struct{})}
}

// first is the first value set under key.
func (s *memStore) first(key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.firsts[key])
}

func (s *memStore) Set(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.firsts[key]; !ok {
		s.firsts[key] = bytes.Clone(value)
	}
	s.values[key] = bytes.Clone(value)
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		s.mu.Lock()
		v, ok := s.values[key]
		changed := s.changed
		s.mu.Unlock()
		if ok {
			return bytes.Clone(v), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dirStore is a store of several processes on one host: a file per key in a
// shared directory, written whole by a rename.
type dirStore string

func (d dirStore) path(key string) string {
	return filepath.Join(string(d), strings.ReplaceAll(key, "/", "_"))
}

func (d dirStore) Set(ctx context.Context, key string, value []byte) error {
	tmp := d.path(key) + ".tmp"
	if err := os.WriteFile(tmp, value, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, d.path(key))
}

func (d dirStore) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		if v, err := os.ReadFile(d.path(key)); err == nil {
			return v, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// storeRank joins a world through store as rank and runs rounds of
// all-gathers.
func storeRank(ctx context.Context, store Store, prefix string, rank, size, lws int) error {
	comm, err := DialStore(ctx, store, prefix, TCPConfig{Rank: rank, Size: size, LocalRank: rank % lws, LocalSize: lws,
		Addr: "127.0.0.1:0", Timeout: 20 * time.Second})
	if err != nil {
		return err
	}
	for round := range 5 {
		got, err := comm.AllGather(ctx, []byte(fmt.Sprintf("rank %d round %d", rank, round)))
		if err != nil {
			return errors.Join(err, comm.Close())
		}
		for from, b := range got {
			if want := fmt.Sprintf("rank %d round %d", from, round); string(b) != want {
				return errors.Join(fmt.Errorf("round %d: rank %d sent %q, want %q", round, from, b, want), comm.Close())
			}
		}
	}
	return comm.Close() // rank 0's waits for the others'

}

func TestDialStore(t *testing.T) {
	checkGoroutines(t)
	store := newMemStore()
	// The others start first and wait for rank 0's values.
	errs := onRanks([]int{3, 2, 1, 0}, func(r int) error {
		if r == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		return storeRank(context.Background(), store, "hiercoll/1/", r, 4, 2)
	})
	for i, err := range errs {
		require.NoError(t, err, "rank %d", 3-i)
	}
	secret, err := store.Get(context.Background(), "hiercoll/1/"+StoreKeySecret)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{64}$`, string(secret))
	// Once every rank has joined, rank 0 marks its address closed.
	addr, err := store.Get(context.Background(), "hiercoll/1/"+StoreKeyAddr)
	require.NoError(t, err)
	require.Equal(t, JobNonce(string(secret))+" closed", string(addr))
	seen := store.first("hiercoll/1/" + StoreKeyAddr)
	nonce, hostPort, ok := strings.Cut(seen, " ")
	require.True(t, ok, seen)
	require.Equal(t, JobNonce(string(secret)), nonce)
	host, port, err := net.SplitHostPort(hostPort)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.NotEqual(t, "0", port, "the real port, picked by the kernel")

	// A second rendezvous through the same store, under its own prefix.
	errs = onRanks(allRanks(2), func(r int) error {
		return storeRank(context.Background(), store, "hiercoll/2/", r, 2, 1)
	})
	require.NoError(t, errors.Join(errs...))
}

func TestDialStoreRankZeroNeverPublishes(t *testing.T) {
	checkGoroutines(t)
	start := time.Now()
	_, err := DialStore(context.Background(), newMemStore(), "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Timeout: 300 * time.Millisecond})
	t.Log(err)
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "rank 0 did not publish its rendezvous address (p/addr) in the store within 300ms")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, []int{0}, e.Ranks)
	require.Less(t, time.Since(start), 5*time.Second)

	_, err = DialStore(context.Background(), newMemStore(), "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Token: "t"})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
}

// storeEnv marks a re-executed test binary as a rank of
// TestDialStoreMultiProcess: "dir rank size".
const storeEnv = "HIERCOLL_BOOTSTRAP_TEST_STORE"

func TestHelperStoreRank(t *testing.T) {
	v := os.Getenv(storeEnv)
	if v == "" {
		t.Skip("a rank of TestDialStoreMultiProcess; runs only when re-executed by it")
	}
	f := strings.Fields(v)
	rank, _ := strconv.Atoi(f[1])
	size, _ := strconv.Atoi(f[2])
	if err := storeRank(context.Background(), dirStore(f[0]), "job/", rank, size, size); err != nil {
		fmt.Fprintln(os.Stderr, "store rank:", err)
		os.Exit(1)
	}
	fmt.Printf("rank %d ok\n", rank)
	os.Exit(0)
}

// TestDialStoreMultiProcess: three OS processes share nothing but a store
// (here a directory): rank 0 listens on a port the kernel picks and
// publishes it with a fresh secret.
func TestDialStoreMultiProcess(t *testing.T) {
	const size = 3
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, size)
	outs := make([]*lockedBuffer, size)
	for r := size - 1; r >= 0; r-- {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStoreRank$", "-test.timeout=60s")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", storeEnv, dir, r, size))
		outs[r] = &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		require.NoError(t, cmd.Start())
		cmds[r] = cmd
	}
	for r, cmd := range cmds {
		err := cmd.Wait()
		require.NoError(t, err, "rank %d: %s", r, outs[r].String())
		require.Contains(t, outs[r].String(), fmt.Sprintf("rank %d ok", r))
	}
}

func TestListenerOnEphemeralPort(t *testing.T) {
	checkGoroutines(t)
	ln, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	require.NotEqual(t, "0", port)

	comms := make([]Comm, 2)
	errs := onRanks(allRanks(2), func(r int) error {
		cfg := TCPConfig{Rank: r, Size: 2, LocalRank: r, LocalSize: 2, Token: testToken, Timeout: 10 * time.Second}
		if r == 0 {
			cfg.Listener = ln
		} else {
			cfg.Addr = addr
		}
		var err error
		comms[r], err = DialTCP(context.Background(), cfg)
		return err
	})
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, ln.Close(), "DialTCP owns it now: Close does nothing")
	_, err = DialTCP(context.Background(), TCPConfig{Rank: 0, Size: 1, LocalRank: 0, LocalSize: 1, Token: testToken, Listener: ln})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument, "a listener serves one rendezvous")
	require.NoError(t, comms[1].Close())
	require.NoError(t, comms[0].Close())

	// Only rank 0 serves; DialTCP takes the listener over and closes it.
	ln, err = Listen("127.0.0.1:0")
	require.NoError(t, err)
	_, err = DialTCP(context.Background(), TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Token: testToken, Listener: ln})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, "only rank 0 serves")
	_, err = net.Dial("tcp", ln.Addr())
	require.Error(t, err, "closed")

	// A listener never passed is closed by its owner.
	ln, err = Listen("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
	require.NoError(t, ln.Close())

	_, err = Listen("127.0.0.1:-1")
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
}

// watchedStore tells, on reads, which key was read.
type watchedStore struct {
	Store
	reads chan string
}

func (s watchedStore) Get(ctx context.Context, key string) ([]byte, error) {
	select {
	case s.reads <- key:
	default:
	}
	return s.Store.Get(ctx, key)
}

// A job's rank 1 that starts before its rank 0, under a prefix an earlier
// job used, finds that job's values: it does not dial the earlier job's
// server (gone: its retries would run to the deadline) but waits for its own
// rank 0's values, and joins its own job.
func TestDialStoreWaitsOutAnEarlierJobsValues(t *testing.T) {
	checkGoroutines(t)
	store := newMemStore()
	require.NoError(t, errors.Join(onRanks(allRanks(2), func(r int) error {
		return storeRank(context.Background(), store, "job/", r, 2, 2)
	})...), "the earlier job")
	earlier, err := store.Get(context.Background(), "job/"+StoreKeySecret)
	require.NoError(t, err)

	watched := watchedStore{store, make(chan string, 1)}
	rank1 := make(chan error, 1)
	go func() { rank1 <- storeRank(context.Background(), watched, "job/", 1, 2, 2) }()
	require.Equal(t, "job/"+StoreKeyAddr, <-watched.reads, "rank 1 reads the earlier job's address first")
	require.NoError(t, storeRank(context.Background(), store, "job/", 0, 2, 2))
	require.NoError(t, <-rank1)
	now, err := store.Get(context.Background(), "job/"+StoreKeySecret)
	require.NoError(t, err)
	require.NotEqual(t, string(earlier), string(now))
}

// An address and a secret of two different rendezvous (an earlier job's and
// a later one's) are recognised by their nonces and not joined; at the
// deadline the error says what the store held.
func TestDialStoreRefusesValuesOfTwoRendezvous(t *testing.T) {
	checkGoroutines(t)
	ln, err := Listen("127.0.0.1:0") // a server that must never be dialled
	require.NoError(t, err)
	defer ln.Close()
	store := newMemStore()
	older, newer := NewSecret(), NewSecret()
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeyAddr, []byte(JobNonce(older)+" "+ln.Addr())))
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeySecret, []byte(newer)))
	_, err = DialStore(context.Background(), store, "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Timeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, hcerr.ErrTimeout)
	require.ErrorContains(t, err, "an address of job "+JobNonce(older)+" and a secret of job "+JobNonce(newer)+", values of two different rendezvous")
	require.ErrorContains(t, err, "give each rendezvous a prefix of its own")

	// A value that is not this library's address is quoted, cut short.
	require.NoError(t, store.Set(context.Background(), "p/"+StoreKeyAddr, bytes.Repeat([]byte("x"), 64<<20)))
	_, err = DialStore(context.Background(), store, "p/", TCPConfig{Rank: 1, Size: 2, LocalRank: 1, LocalSize: 2, Timeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.Less(t, len(err.Error()), 1024)
}

// Rank 0 of a job refuses a prefix whose address names another job's
// rendezvous that is still open (its server answers): that job's ranks, or
// this one's, could be joining it. Once it has ended, the prefix is free.
func TestDialStoreRefusesAnotherJobsOpenRendezvous(t *testing.T) {
	checkGoroutines(t)
	store := newMemStore()
	ctx, cancel := context.WithCancel(context.Background())
	other := make(chan error, 1)
	go func() { // the other job's rank 0, waiting for a rank 1 that never comes
		_, err := DialStore(ctx, store, "job/", TCPConfig{Rank: 0, Size: 2, LocalRank: 0, LocalSize: 2, Addr: "127.0.0.1:0", Timeout: time.Minute})
		other <- err
	}()
	v, err := store.Get(context.Background(), "job/"+StoreKeyAddr)
	require.NoError(t, err)
	at, err := parseStoreAddr(v)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", at.addr) // serving: it sends its challenge
	require.NoError(t, err)
	typ, _, err := readFrame(conn, maxHandshakeFrame)
	require.NoError(t, err)
	require.Equal(t, frameChallenge, typ)
	require.NoError(t, conn.Close())
	_, err = DialStore(context.Background(), store, "job/", TCPConfig{Rank: 0, Size: 2, LocalRank: 0, LocalSize: 2, Addr: "127.0.0.1:0", Timeout: time.Minute})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.ErrorContains(t, err, "names another job's rendezvous")
	require.ErrorContains(t, err, "give each rendezvous a prefix of its own")

	cancel()
	require.ErrorIs(t, <-other, context.Canceled)
	require.NoError(t, errors.Join(onRanks(allRanks(2), func(r int) error {
		return storeRank(context.Background(), store, "job/", r, 2, 2)
	})...), "the prefix is free once the other rendezvous has ended")
}

// A job that was killed leaves its values open, naming a server that is
// gone. This job's rank 1, started before its rank 0, dials that address;
// once rank 0 (which finds the server gone and replaces the values) has
// published, rank 1 reads the store again and joins.
func TestDialStoreRedialsPastAKilledJobsValues(t *testing.T) {
	checkGoroutines(t)
	ln, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr()
	require.NoError(t, ln.Close())
	store := newMemStore()
	killed := NewSecret()
	require.NoError(t, store.Set(context.Background(), "job/"+StoreKeySecret, []byte(killed)))
	require.NoError(t, store.Set(context.Background(), "job/"+StoreKeyAddr, []byte(JobNonce(killed)+" "+gone)))

	watched := watchedStore{store, make(chan string, 16)}
	rank1 := make(chan error, 1)
	go func() { rank1 <- storeRank(context.Background(), watched, "job/", 1, 2, 2) }()
	for key := range watched.reads { // rank 1 has read both values: it dials the killed job's address
		if key == "job/"+StoreKeySecret {
			break
		}
	}
	require.NoError(t, storeRank(context.Background(), store, "job/", 0, 2, 2))
	require.NoError(t, <-rank1)
}
