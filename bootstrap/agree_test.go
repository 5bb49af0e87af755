package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// agreeOnAll runs Agree on every rank of a local world, rank r voting
// local(r) with payload {10+r}.
func agreeOnAll(t *testing.T, size int, local func(r int) error) ([][][]byte, []error) {
	t.Helper()
	comms, err := Local(Shape{Nodes: 1, LocalSize: size})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, failures := make([][][]byte, size), make([]error, size)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all[r], failures[r] = Agree(ctx, c, local(r), []byte{byte(10 + r)})
		}()
	}
	wg.Wait()
	return all, failures
}

func TestAgreeCarriesPayloads(t *testing.T) {
	all, failures := agreeOnAll(t, 4, func(int) error { return nil })
	for r := range all {
		require.NoError(t, failures[r])
		for q, p := range all[r] {
			require.True(t, bytes.Equal(p, []byte{byte(10 + q)}), "rank %d sees payload %v of rank %d", r, p, q)
		}
	}
}

// A failed rank gets its own error; the others get one naming every failed
// rank (ErrPeer, and ErrNotSupported only when every failure was).
func TestAgreeNamesEveryFailedRank(t *testing.T) {
	errBroken := errors.New("device on fire")
	errNoLib := fmt.Errorf("libfoo missing: %w", hcerr.ErrNotSupported)
	_, failures := agreeOnAll(t, 4, func(r int) error {
		switch r {
		case 1:
			return errBroken
		case 3:
			return errNoLib
		}
		return nil
	})
	require.ErrorIs(t, failures[1], errBroken)
	require.ErrorIs(t, failures[3], errNoLib)
	for _, r := range []int{0, 2} {
		require.ErrorIs(t, failures[r], hcerr.ErrPeer)
		require.NotErrorIs(t, failures[r], hcerr.ErrNotSupported)
		require.ErrorContains(t, failures[r], "rank 1 failed: device on fire; rank 3 failed: libfoo missing")
		var pe *PeerError
		require.ErrorAs(t, failures[r], &pe)
		require.Equal(t, []int{1, 3}, pe.Ranks)
	}
	_, failures = agreeOnAll(t, 2, func(r int) error {
		if r == 1 {
			return errNoLib
		}
		return nil
	})
	require.ErrorIs(t, failures[0], hcerr.ErrNotSupported)
}

// A Vote reads back as what it said; anything else a payload may hold is
// not a yes.
func TestVotes(t *testing.T) {
	require.True(t, Yes(Vote(true)))
	require.False(t, Yes(Vote(false)))
	for _, p := range [][]byte{nil, {}, {2}, {1, 1}} {
		require.False(t, Yes(p), "%v", p)
	}
	require.Equal(t, 2, CountYes([][]byte{Vote(true), Vote(false), {1, 0}, Vote(true)}))
}
