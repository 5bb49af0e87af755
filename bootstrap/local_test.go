package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed12530e24/hiercoll/internal/hcerr"
)

func TestLocalAllGatherAndBarrier(t *testing.T) {
	comms, err := Local(Shape{Nodes: 2, LocalSize: 3})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(comms))
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, r%3, c.LocalRank())
			for round := 0; round < 20; round++ {
				got, err := c.AllGather(ctx, []byte(fmt.Sprintf("r%d-%d", r, round)))
				if err != nil {
					errs[r] = err
					return
				}
				for q, b := range got {
					if string(b) != fmt.Sprintf("r%d-%d", q, round) {
						errs[r] = fmt.Errorf("round %d: rank %d's blob is %q", round, q, b)
						return
					}
				}
				if err := c.Barrier(ctx); err != nil {
					errs[r] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

func TestLocalMissingRankTimesOutNamingIt(t *testing.T) {
	comms, err := Local(Shape{Nodes: 1, LocalSize: 3})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := 0; r < 2; r++ { // rank 2 never arrives
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = comms[r].Barrier(ctx) }()
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, hcerr.ErrTimeout)
		require.ErrorContains(t, err, "ranks 2 never arrived")
	}
	// The failure is sticky: later collectives do not pair with the wrong round.
	_, err = comms[0].AllGather(context.Background(), nil)
	require.ErrorContains(t, err, "after an earlier failure")
}

func TestLocalMismatchedCollectives(t *testing.T) {
	comms, err := Local(Shape{Nodes: 1, LocalSize: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = comms[0].Barrier(ctx) }()
	go func() { defer wg.Done(); _, errs[1] = comms[1].AllGather(ctx, []byte("x")) }()
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	}
}

func TestLocalRejectsBadShapeAndBigBlob(t *testing.T) {
	_, err := Local(Shape{Nodes: 0, LocalSize: 2})
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	comms, err := Local(Shape{Nodes: 1, LocalSize: 1})
	require.NoError(t, err)
	_, err = comms[0].AllGather(context.Background(), make([]byte, MaxBlob+1))
	require.ErrorIs(t, err, hcerr.ErrInvalidArgument)
	require.NoError(t, comms[0].Close())
	_, err = comms[0].AllGather(context.Background(), nil)
	require.ErrorIs(t, err, hcerr.ErrClosed)
}
