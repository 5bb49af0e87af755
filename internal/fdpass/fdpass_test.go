package fdpass

import (
	"bytes"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

// pipeWithData returns the read end of a pipe holding msg.
func pipeWithData(t *testing.T, msg string) int {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString(msg)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	fd, err := syscall.Dup(int(r.Fd()))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	t.Cleanup(func() { syscall.Close(fd) })
	return fd
}

// Each taker gets its own descriptor of the same open file; the offer
// ends once every taker has taken it.
func TestOfferAndTake(t *testing.T) {
	fd := pipeWithData(t, "multicast handle")
	o, err := NewOffer(fd, 3, 10*time.Second)
	require.NoError(t, err)
	defer o.Close()
	got := make([]int, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = Take(o.Name(), o.Token(), 5*time.Second)
		}()
	}
	wg.Wait()
	for i, g := range got {
		require.NoError(t, errs[i])
		require.NotEqual(t, fd, g)
		require.Greater(t, g, 2, "taker %d", i)
	}
	// Same open file: what one taker reads, the others no longer see.
	buf := make([]byte, 64)
	n, err := syscall.Read(got[0], buf)
	require.NoError(t, err)
	require.Equal(t, "multicast handle", string(buf[:n]))
	for _, g := range got {
		require.NoError(t, syscall.Close(g))
	}
	// Every taker served: the socket is gone.
	require.Eventually(t, func() bool {
		_, err := Take(o.Name(), o.Token(), 100*time.Millisecond)
		return err != nil
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, o.Err())
}

// A wrong token gets nothing, and does not use up a taker's turn.
func TestWrongTokenIsRefused(t *testing.T) {
	fd := pipeWithData(t, "x")
	o, err := NewOffer(fd, 1, 10*time.Second)
	require.NoError(t, err)
	defer o.Close()
	bad := bytes.Repeat([]byte{7}, TokenSize)
	_, err = Take(o.Name(), bad, 2*time.Second)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	_, err = Take(o.Name(), []byte("short"), time.Second)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	g, err := Take(o.Name(), o.Token(), 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, syscall.Close(g))
}

// An offer nobody takes ends at its deadline, saying how many were served;
// a closed offer serves no one.
func TestOfferIsBounded(t *testing.T) {
	fd := pipeWithData(t, "x")
	o, err := NewOffer(fd, 2, 100*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return o.Err() != nil }, 5*time.Second, 10*time.Millisecond)
	require.ErrorContains(t, o.Err(), "0 of 2 takers served")
	_, err = Take(o.Name(), o.Token(), time.Second)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.NoError(t, o.Close())

	o, err = NewOffer(fd, 1, time.Minute)
	require.NoError(t, err)
	require.NoError(t, o.Close())
	require.NoError(t, o.Close(), "a second Close is a no-op")
	_, err = Take(o.Name(), o.Token(), time.Second)
	require.ErrorIs(t, err, hcerr.ErrPeer)
	require.NoError(t, o.Err(), "closing is not a failure")

	_, err = NewOffer(fd, 1, 0)
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
}
