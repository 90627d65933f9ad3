package observer_test

import (
	"context"
	"strings"
	"testing"

	"dshmem/observer"
	"dshmem/observer/internal/enginetest"

	"github.com/stretchr/testify/require"
)

// TestIngestReturnsAppendedEnvelopes: an appended event's outcome carries
// the envelope as the log holds it (redacted, stamped with stream and
// seq); a duplicate's and a rejected line's carry none.
func TestIngestReturnsAppendedEnvelopes(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	line := []byte(`{"id":"o:1","type":"user/message","time":"2026-08-18T10:00:00Z","session":"o","cwd":"/home/u/o","data":{"text":"token=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789 works"}}`)
	bad := []byte(`{"id":"o:2","type":"user/message"}`)
	_, outs, err := eng.Ingest(context.Background(), [][]byte{line, bad, line})
	require.NoError(t, err)
	require.Len(t, outs, 3, "got %d outcomes, want 3", len(outs))
	ev := outs[0].Event
	switch {
	case outs[0].Status != observer.StatusAppended || ev == nil:
		t.Fatalf("got %+v, want an appended event with its envelope", outs[0])
	case ev.Seq != outs[0].Seq || ev.Stream != outs[0].Stream || ev.Seq == 0 || ev.ID != "o:1":
		t.Fatalf("got envelope %s/%d %s, want %s/%d o:1", ev.Stream, ev.Seq, ev.ID, outs[0].Stream, outs[0].Seq)
	case strings.Contains(string(ev.Data), "ghp_aBcDeF") || !strings.Contains(string(ev.Data), "[REDACTED:github-token]"):
		t.Fatalf("got data %s, want the token redacted", ev.Data)
	}
	require.Nil(t, outs[1].Event, "got envelopes for a rejected (%v) or duplicate (%v) line, want none", outs[1].Event, outs[2].Event)
	require.Nil(t, outs[2].Event, "got envelopes for a rejected (%v) or duplicate (%v) line, want none", outs[1].Event, outs[2].Event)
}
