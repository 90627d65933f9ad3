// Package storetest holds what the tests of sqlstore and its packages
// share: a small folded conversation to search.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/require"
)

// Msg is an envelope of stream at seq, with an id and a time derived
// from them and data marshalled.
func Msg(stream string, seq uint64, typ, session string, data map[string]any) events.Envelope {
	b, _ := json.Marshal(data)
	return events.Envelope{V: 1, Stream: stream, Seq: seq, ID: fmt.Sprintf("dsh:%s:%d", session, seq), Type: typ,
		Time: fmt.Sprintf("2026-08-18T10:%02d:00Z", seq%60), Session: session, Data: b}
}

// SearchFixture folds a small conversation plus filler, so that bm25 has
// something to weigh against.
func SearchFixture(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	evs := []events.Envelope{
		Msg("ws-a", 1, events.TypeUserMessage, "s1", map[string]any{"text": "我们的记忆注入逻辑需要修复"}),
		Msg("ws-a", 2, events.TypeAssistantMessage, "s1", map[string]any{"text": "The handler calls parseHTTPRequest before the cache"}),
		Msg("ws-a", 3, events.TypeToolResult, "s1", map[string]any{"name": "bash", "text": "go_build.sh: ok"}),
		Msg("ws-a", 4, events.TypeUserMessage, "s1", map[string]any{"text": "<memory>记忆条目</memory>", "injected": true}),
		Msg("ws-a", 5, events.TypeTaskEnd, "s1", map[string]any{"request": "整理日志", "result": "已完成"}),
	}
	for i := uint64(1); i <= 200; i++ {
		evs = append(evs, Msg("ws-b", i, events.TypeAssistantMessage, "s2", map[string]any{"text": fmt.Sprintf("无关的填充文本 number %d about the weather", i)}))
	}
	evs = append(evs, Msg("ws-b", 201, events.TypeUserMessage, "s2", map[string]any{"text": "另一个工作区也谈到记忆"}))
	require.NoError(t, projector.New(s).Fold(context.Background(), evs))
	return s
}
