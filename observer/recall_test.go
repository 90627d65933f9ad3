package observer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordShown: Engine.RecordShown writes one memory/shown event with
// the writer's id and {entries, session, mode} — the same event the
// server's recordShown queues — and a read-only engine refuses it.
func TestRecordShown(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	at := time.Date(2026, 8, 18, 10, 0, 0, 123, time.UTC)
	t.Run("OK", func(t *testing.T) {
		require.NoError(t, eng.RecordShown(ctx, "s1", "/work/shown", "recall", []string{"m-0000000000000001", "m-0000000000000002"}, at))
		evs, err := eng.Store().Events(ctx, sqlstore.EventFilter{Session: "s1"})
		require.NoError(t, err)
		require.Len(t, evs, 1)
		ev := evs[0]
		var shown payload.Shown
		require.NoError(t, payload.Unmarshal(ev.Data, &shown))
		want := []string{"shown:s1:1787047200000000123", events.TypeMemoryShown, observer.StreamForCwd("/work/shown"), "2026-08-18T10:00:00.000000123Z", "recall", "s1"}
		got := []string{ev.ID, ev.Type, ev.Stream, ev.Time, shown.Mode, shown.Session}
		for i := range want {
			assert.Equal(t, want[i], got[i], "got %q, want %q", got[i], want[i])
		}
		assert.Len(t, shown.Entries, 2)
	})
	t.Run("NothingForNoIDs", func(t *testing.T) {
		require.NoError(t, eng.RecordShown(ctx, "s2", "", "recall", nil, at))
		evs, err := eng.Store().Events(ctx, sqlstore.EventFilter{Session: "s2"})
		require.NoError(t, err)
		require.Empty(t, evs)
	})
	require.NoError(t, eng.Close())
	t.Run("ErrReadOnly", func(t *testing.T) {
		ro, err := observer.Open(ctx, root, observer.Options{ReadOnly: true})
		require.NoError(t, err)
		defer ro.Close()
		if err := ro.RecordShown(ctx, "s1", "", "recall", []string{"m-0000000000000001"}, at); !errors.Is(err, observer.ErrReadOnly) {
			t.Fatalf("got %v, want ErrReadOnly", err)
		}
		if _, err := httpapi.NewServer(ro, httpapi.ServerOptions{}); !errors.Is(err, observer.ErrReadOnly) {
			t.Fatalf("NewServer: got %v, want ErrReadOnly", err)
		}
	})
}
