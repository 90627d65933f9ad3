package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func msg(stream string, seq uint64, typ, session string, data map[string]any) events.Envelope {
	b, _ := json.Marshal(data)
	return events.Envelope{V: 1, Stream: stream, Seq: seq, ID: fmt.Sprintf("dsh:%s:%d", session, seq), Type: typ,
		Time: fmt.Sprintf("2026-08-18T10:%02d:00Z", seq%60), Session: session, Data: b}
}

// searchFixture folds a small conversation plus filler, so that bm25 has
// something to weigh against.
func searchFixture(t *testing.T) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	evs := []events.Envelope{
		msg("ws-a", 1, events.TypeUserMessage, "s1", map[string]any{"text": "我们的记忆注入逻辑需要修复"}),
		msg("ws-a", 2, events.TypeAssistantMessage, "s1", map[string]any{"text": "The handler calls parseHTTPRequest before the cache"}),
		msg("ws-a", 3, events.TypeToolResult, "s1", map[string]any{"name": "bash", "text": "go_build.sh: ok"}),
		msg("ws-a", 4, events.TypeUserMessage, "s1", map[string]any{"text": "<memory>记忆条目</memory>", "injected": true}),
		msg("ws-a", 5, events.TypeTaskEnd, "s1", map[string]any{"request": "整理日志", "result": "已完成"}),
	}
	for i := uint64(1); i <= 200; i++ {
		evs = append(evs, msg("ws-b", i, events.TypeAssistantMessage, "s2", map[string]any{"text": fmt.Sprintf("无关的填充文本 number %d about the weather", i)}))
	}
	evs = append(evs, msg("ws-b", 201, events.TypeUserMessage, "s2", map[string]any{"text": "另一个工作区也谈到记忆"}))
	require.NoError(t, projector.New(s).Fold(context.Background(), evs))
	return s
}

func TestExistingIDs(t *testing.T) {
	s := searchFixture(t)
	ctx := context.Background()
	ids := []string{"dsh:s1:1", "dsh:s1:3", "dsh:s1:99", "dsh:s2:5", `quote"d`}
	for range 3000 { // more ids than SQLite allows parameters in older builds
		ids = append(ids, "dsh:none")
	}
	got, err := s.ExistingIDs(ctx, "ws-a", ids)
	require.NoError(t, err)
	assert.False(t, len(got) != 2 || !got["dsh:s1:1"] || !got["dsh:s1:3"], "got %v, want dsh:s1:1 and dsh:s1:3 (dsh:s2:5 is in another stream)", got)
	if got, err := s.ExistingIDs(ctx, "ws-a", nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: got %v, %v", got, err)
	}
}

func TestStatsAndCursors(t *testing.T) {
	s := searchFixture(t)
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	assert.False(t, st.Streams != 2 || st.Events != 206 || st.Episodes != 206 || st.Sessions != 2 || st.Entries != 0 || st.DBBytes <= 0, "got %+v", st)
	if c, err := s.Cursor("ws-b"); err != nil || c != 201 {
		t.Errorf("got cursor %d, %v; want 201", c, err)
	}
	if c, err := s.Cursor("ws-none"); err != nil || c != 0 {
		t.Errorf("got cursor %d, %v; want 0", c, err)
	}
	cur, err := s.Cursors()
	assert.False(t, err != nil || len(cur) != 2 || cur["ws-a"] != 5, "got %v, %v", cur, err)
}

// A migration that adds a projection resets the cursors, so the projector
// folds everything again instead of leaving the new table empty.
func TestDownUpResetsCursors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "index.db")
	s, err := sqlstore.Open(p)
	require.NoError(t, err)
	require.NoError(t, projector.New(s).Fold(context.Background(), []events.Envelope{
		msg("ws-a", 1, events.TypeMemoryRemember, "s", map[string]any{"content": "记住这个"}),
	}))
	s.Close()
	require.NoError(t, sqlstore.MigrateDownTo(p, 1))
	require.NoError(t, sqlstore.MigrateUp(p))
	s, err = sqlstore.Open(p)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Stats(context.Background())
	require.NoError(t, err)
	c, _ := s.Cursor("ws-a")
	assert.False(t, c != 0 || st.Events != 0 || st.Entries != 0, "after down and up: cursor %d, %+v; want everything reset", c, st)
}
