package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/observer/internal/enginetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDue(t *testing.T) {
	last := ckT0
	for _, tc := range []struct {
		name string
		p    Pending
		now  time.Time
		want string
	}{
		{"NoUserTurn", Pending{UserTurns: 0, SessionEnd: true, UserChars: 9000}, last.Add(time.Hour), ""},
		{"SessionEnd", Pending{UserTurns: 1, SessionEnd: true, TaskEnd: true}, last, ReasonSessionEnd},
		{"Compaction", Pending{UserTurns: 1, Compaction: true, TaskEnd: true}, last, ReasonCompaction},
		{"TaskEnd", Pending{UserTurns: 1, TaskEnd: true}, last, ReasonTaskEnd},
		{"UserTurns", Pending{UserTurns: 10}, last, ReasonUserTurns},
		{"NineTurns", Pending{UserTurns: 9, UserChars: 3999}, last.Add(TriggerIdle - time.Second), ""},
		{"Chars", Pending{UserTurns: 2, UserChars: 4000}, last, ReasonChars},
		{"Idle", Pending{UserTurns: 1}, last.Add(TriggerIdle), ReasonIdle},
		{"ZeroNow", Pending{UserTurns: 1}, time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.LastActivity = last
			got, ok := Due(tc.p, tc.now)
			assert.False(t, got != tc.want || ok != (tc.want != ""), "got %q %v, want %q", got, ok, tc.want)
		})
	}
}

func TestPendingFromLog(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng := enginetest.Open(t, root)
	c := &ckConv{session: "s1", cwd: "/p"}
	enginetest.Ingest(t, eng, c.add("user: hello there", "injected: remember that injected text counts for nothing",
		"assistant: hi", "tool: file body", "user: 你好").lines)
	enginetest.Ingest(t, eng, (&ckConv{session: "quiet", cwd: "/p"}).add("assistant: no user here").lines)
	p, err := Scan(ctx, eng)
	require.NoError(t, err)
	require.Len(t, p, 1, "got %+v, want the one session with a user turn", p)
	got := p[0]
	want := Pending{Stream: observer.StreamForCwd("/p"), Session: "s1", Cwd: "/p", From: 1, To: 5, Events: 5, UserTurns: 2,
		UserChars: len("hello there") + 2, LastActivity: ckT0.Add(4 * time.Minute)}
	require.Equal(t, want, got, "got  %+v\nwant %+v", got, want)

	t.Run("IdleInEventTime", func(t *testing.T) {
		// Automatic path: no clock given, the newest event time is now.
		if res := ckCheckpoint(t, eng, Request{}); len(res) != 0 {
			t.Fatalf("checkpointed a session idle for no time: %+v", res)
		}
		enginetest.Ingest(t, eng, (&ckConv{session: "other", cwd: "/q", n: 9}).add("assistant: five minutes later").lines)
		res := ckCheckpoint(t, eng, Request{})
		require.Len(t, res, 1, "got %+v, want s1 checkpointed as idle", res)
		require.Equal(t, ReasonIdle, res[0].Reason, "got %+v, want s1 checkpointed as idle", res)
		require.EqualValues(t, 1, res[0].From, "got %+v, want s1 checkpointed as idle", res)
		require.EqualValues(t, 5, res[0].To, "got %+v, want s1 checkpointed as idle", res)
	})
	t.Run("NewWorkAfterTheClaim", func(t *testing.T) {
		enginetest.Ingest(t, eng, c.add("user: more").lines)
		eng.Close()
		eng = enginetest.Open(t, root) // derived from the log: survives a restart
		p, err := Scan(ctx, eng)
		require.NoError(t, err)
		require.Len(t, p, 1, "got %+v, want only the new turn (seq 8: the quiet session has 6, the memory/ops 7)", p)
		require.EqualValues(t, 5, p[0].Claimed, "got %+v, want only the new turn (seq 8: the quiet session has 6, the memory/ops 7)", p)
		require.EqualValues(t, 8, p[0].From, "got %+v, want only the new turn (seq 8: the quiet session has 6, the memory/ops 7)", p)
		require.EqualValues(t, 1, p[0].UserTurns, "got %+v, want only the new turn (seq 8: the quiet session has 6, the memory/ops 7)", p)
		require.EqualValues(t, 1, p[0].Events, "got %+v, want only the new turn (seq 8: the quiet session has 6, the memory/ops 7)", p)
	})
}

// BenchmarkPending measures what Run reads from the index before it
// distils anything, on a root of 40 sessions of 200 events in 4
// workspaces, half of them checkpointed: the newest event time, the
// pending work of every session (Scan), and the claim of one session's
// events with their messages (scanPending with msgs).
func BenchmarkPending(b *testing.B) {
	ctx := context.Background()
	eng := enginetest.Open(b, b.TempDir())
	for i := range 40 {
		c := &ckConv{session: fmt.Sprintf("s%02d", i), cwd: fmt.Sprintf("/w%d", i%4)}
		for range 50 {
			c.add("user: make the build reproducible with a pinned toolchain",
				"assistant: pinned it in go.mod", "tool: go: downloading toolchain", "injected: runtime context")
		}
		enginetest.Ingest(b, eng, c.lines)
		if i%2 == 0 {
			_, err := Run(ctx, eng, Request{Session: c.session, Force: true})
			require.NoError(b, err)
		}
	}
	e := engine{eng}
	ps, err := e.pending(ctx, "", "")
	require.NoError(b, err, "got %d pending sessions (err %v), want 20", len(ps), err)
	require.Len(b, ps, 20, "got %d pending sessions (err %v), want 20", len(ps), err)
	b.Run("Scan", func(b *testing.B) {
		for b.Loop() {
			_, err := e.newestEventTime(ctx)
			require.NoError(b, err)
			if _, err := e.pending(ctx, "", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Claim", func(b *testing.B) {
		for b.Loop() {
			p := ps[0]
			var msgs []distill.Message
			err := e.scanPending(ctx, &p, &msgs)
			require.NoError(b, err, "got %d messages (err %v), want 150", len(msgs), err)
			require.Len(b, msgs, 150, "got %d messages (err %v), want 150", len(msgs), err)
		}
	})
}
