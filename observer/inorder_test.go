package observer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInOrderCollectsInStartOrder: jobs that finish in the reverse of
// their start order are collected in start order, with at most the
// given number in flight.
func TestInOrderCollectsInStartOrder(t *testing.T) {
	var got []int
	var running, most atomic.Int32
	q := NewInOrder(3, func(i int, err error) {
		require.NoError(t, err)
		got = append(got, i)
	}, nil)
	for i := range 30 {
		require.NoError(t, q.Go(context.Background(), func() (int, error) {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Duration(3-i%3) * time.Millisecond) // the later of three finishes first
			running.Add(-1)
			return i, nil
		}))
	}
	require.NoError(t, q.Wait())
	want := make([]int, 30)
	for i := range want {
		want[i] = i
	}
	assert.Equal(t, want, got)
	assert.LessOrEqual(t, most.Load(), int32(3))
}

// TestInOrderStopsAtTheFirstFailure: once a job has failed no job
// starts; the jobs started before it are collected; onFail runs once,
// after the failed job's result is collected; Wait returns the error of
// the first failed job in start order, even when a later one failed
// first.
func TestInOrderStopsAtTheFirstFailure(t *testing.T) {
	errTwo, errThree := errors.New("two"), errors.New("three")
	var collected []int
	var failedAt []int // collected when onFail ran
	q := NewInOrder(2, func(i int, err error) { collected = append(collected, i) }, func() {
		failedAt = append(failedAt, len(collected))
	})
	release := make(chan struct{})
	require.NoError(t, q.Go(context.Background(), func() (int, error) { return 1, nil }))
	require.NoError(t, q.Go(context.Background(), func() (int, error) {
		<-release
		return 2, errTwo
	}))
	// Job 3 fails at once, before job 2: no job starts from then on.
	require.NoError(t, q.Go(context.Background(), func() (int, error) {
		defer close(release)
		return 3, errThree
	}))
	ran := false
	err := q.Go(context.Background(), func() (int, error) { ran = true; return 4, nil })
	require.ErrorIs(t, err, ErrInOrderStopped)
	require.ErrorIs(t, q.Wait(), errTwo)
	assert.False(t, ran, "a job started after a failure")
	assert.Equal(t, []int{1, 2, 3}, collected)
	assert.Equal(t, []int{2}, failedAt, "onFail runs once, when the first failure is collected")
}

// TestInOrderGoWaitsForASlot: Go blocks while every slot is taken and
// gives up with the context's error.
func TestInOrderGoWaitsForASlot(t *testing.T) {
	q := NewInOrder(1, func(int, error) {}, nil)
	release := make(chan struct{})
	require.NoError(t, q.Go(context.Background(), func() (int, error) { <-release; return 0, nil }))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.Go(ctx, func() (int, error) { return 1, nil }), context.DeadlineExceeded)
	close(release)
	require.NoError(t, q.Go(context.Background(), func() (int, error) { return 2, nil }))
	require.NoError(t, q.Wait())
}
