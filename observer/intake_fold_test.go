package observer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// takeTicket takes an intake ticket as a call does before it appends.
func (e *Engine) takeTicket() uint64 {
	e.foldMu.Lock()
	defer e.foldMu.Unlock()
	e.nextTicket++
	return e.nextTicket - 1
}

// foldAsync runs foldInTurn for ticket on a goroutine; the channel is
// closed when it returns.
func (e *Engine) foldAsync(ticket uint64) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.foldInTurn(context.Background(), ticket, nil)
	}()
	return done
}

// The caller whose turn has come waits for the calls that took their
// tickets before it, so they fold together (gather); a lone caller does
// not wait, and nobody waits longer than foldGather.
func TestFoldGathersCallsInFlight(t *testing.T) {
	ctx := context.Background()
	eng, err := Open(ctx, t.TempDir(), Options{})
	require.NoError(t, err)
	defer eng.Close()
	defer func(d time.Duration) { foldGather = d }(foldGather)

	foldGather = time.Hour
	select {
	case <-eng.foldAsync(eng.takeTicket()):
	case <-time.After(10 * time.Second):
		t.Fatal("a lone call waited to fold")
	}

	first, second := eng.takeTicket(), eng.takeTicket()
	done := eng.foldAsync(first)
	select {
	case <-done:
		t.Fatal("the call whose turn came folded without the call in flight behind it")
	case <-time.After(100 * time.Millisecond):
	}
	<-eng.foldAsync(second)
	<-done

	foldGather = 20 * time.Millisecond
	first, second = eng.takeTicket(), eng.takeTicket()
	select {
	case <-eng.foldAsync(first):
	case <-time.After(10 * time.Second):
		t.Fatal("the wait for a call in flight did not end after foldGather")
	}
	<-eng.foldAsync(second)
}
