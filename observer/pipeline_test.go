package observer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/internal/enginetest"

	"github.com/stretchr/testify/require"
)

// TestConcurrentIntake runs intake calls from many goroutines at once —
// the same ids sent by several of them, sessions whose cwd arrives in
// one call and their messages (without cwd) in another — and checks
// that each id is in the log once, in the stream of its session's cwd,
// and that the live index equals a rebuild of the log.
func TestConcurrentIntake(t *testing.T) {
	ctx := context.Background()
	eng, err := observer.Open(ctx, t.TempDir(), observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	const sessions, msgs, senders = 8, 40, 6
	var wg sync.WaitGroup
	errc := make(chan error, senders*2)
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for s := 0; s < sessions; s++ {
				// Every sender sends every session's start and messages,
				// in its own order and batching: all but one copy of each
				// id must be dropped as a duplicate.
				var lines [][]byte
				lines = append(lines, []byte(fmt.Sprintf(`{"id":"start-%d","type":"session/start","time":"2026-08-18T10:00:00Z","session":"s%d","cwd":"/w/%d","data":{"origin":"top"}}`, s, s, s)))
				for m := 0; m < msgs; m++ {
					if (m+g)%3 == 0 {
						if _, _, err := eng.Ingest(ctx, lines); err != nil {
							errc <- err
							return
						}
						lines = nil
					}
					lines = append(lines, []byte(fmt.Sprintf(`{"id":"m-%d-%d","type":"user/message","time":"2026-08-18T10:00:01Z","session":"s%d","data":{"text":"message %d of session %d"}}`, s, m, s, m, s)))
				}
				if _, _, err := eng.Ingest(ctx, lines); err != nil {
					errc <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	count := map[string]int{}
	lg := eng.Log()
	for _, st := range lg.Streams() {
		require.NoError(t, lg.Scan(st, 1, func(e events.Envelope) error {
			count[e.ID]++
			var s int
			if _, err := fmt.Sscanf(e.Session, "s%d", &s); err != nil {
				return err
			}
			if want := observer.StreamForCwd(fmt.Sprintf("/w/%d", s)); st != want {
				return fmt.Errorf("%s is in stream %s, want %s (its session's cwd)", e.ID, st, want)
			}
			return nil
		}))
	}
	require.Len(t, count, sessions*(msgs+1), "got %d distinct ids in the log, want %d", len(count), sessions*(msgs+1))
	for id, n := range count {
		require.EqualValues(t, 1, n, "%s is in the log %d times", id, n)
	}
	live, fresh := enginetest.IndexDumps(t, eng)
	require.Equal(t, fresh, live, "live index differs from a rebuild of the log")
}
