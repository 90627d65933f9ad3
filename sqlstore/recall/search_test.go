package recall_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/internal/storetest"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSearchEpisodes checks the episodic search of `dshmem search`
// (Recall over observed messages, no score floor) on the things only
// the episodic index holds: bigrams inside a run, word parts, task-end
// text, injected flags, streams.
func TestSearchEpisodes(t *testing.T) {
	s := storetest.SearchFixture(t)
	search := func(t *testing.T, q recall.Query) []recall.Item {
		t.Helper()
		q.Kind, q.Bytes, q.NoFloor, q.Timeout = recall.KindEpisodic, -1, true, 10*time.Second
		if q.Limit == 0 {
			q.Limit = 20
		}
		res, err := recall.Find(context.Background(), s, q)
		require.NoError(t, err)
		return res.Items
	}
	ids := func(hits []recall.Item) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.EventID)
		}
		return out
	}
	has := func(hits []recall.Item, id string) bool {
		for _, h := range hits {
			if h.EventID == id {
				return true
			}
		}
		return false
	}

	t.Run("TwoCharacterChineseWordInsideARun", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "记忆", IncludeInjected: true})
		require.True(t, has(hits, "dsh:s1:1"), "got %v, want s1:1, s1:4 and s2:201", ids(hits))
		require.True(t, has(hits, "dsh:s2:201"), "got %v, want s1:1, s1:4 and s2:201", ids(hits))
		require.True(t, has(hits, "dsh:s1:4"), "got %v, want s1:1, s1:4 and s2:201", ids(hits))
		require.Len(t, hits, 3, "got %v, want s1:1, s1:4 and s2:201", ids(hits))
		for _, h := range hits {
			if h.EventID == "dsh:s1:1" && (h.Stream != "ws-a" || h.Seq != 1 || h.Type != events.TypeUserMessage ||
				h.Session != "s1" || h.Text != "我们的记忆注入逻辑需要修复" || h.Injected || h.Time == "") {
				t.Errorf("got hit %+v", h)
			}
			if h.EventID == "dsh:s1:4" && !h.Injected {
				t.Errorf("injected text not flagged: %+v", h)
			}
		}
	})
	t.Run("InjectedLeftOutByDefault", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "记忆"})
		require.False(t, has(hits, "dsh:s1:4"), "got %v, want s1:1 and s2:201 without the injected s1:4", ids(hits))
		require.Len(t, hits, 2, "got %v, want s1:1 and s2:201 without the injected s1:4", ids(hits))
		hits = search(t, recall.Query{Text: "记忆条目"})
		require.False(t, has(hits, "dsh:s1:4"), "got %v, want s1:1 and s2:201 (the injected s1:4, which holds the whole query, left out)", ids(hits))
		require.Len(t, hits, 2, "got %v, want s1:1 and s2:201 (the injected s1:4, which holds the whole query, left out)", ids(hits))
		hits = search(t, recall.Query{Text: "记忆条目", IncludeInjected: true})
		require.Len(t, hits, 3, "with IncludeInjected: got %+v, want s1:4 first, flagged injected", hits)
		require.EqualValues(t, "dsh:s1:4", hits[0].EventID, "with IncludeInjected: got %+v, want s1:4 first, flagged injected", hits)
		require.True(t, slices.Contains(hits[0].Flags, recall.FlagInjected), "with IncludeInjected: got %+v, want s1:4 first, flagged injected", hits)
		if hits := search(t, recall.Query{Text: "记忆", Scopes: []string{"ws-a"}}); len(hits) != 1 || hits[0].EventID != "dsh:s1:1" {
			t.Fatalf("scoped: got %v, want [dsh:s1:1]", ids(hits))
		}
	})
	t.Run("CamelCasePart", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "request"})
		assert.False(t, len(hits) != 1 || hits[0].EventID != "dsh:s1:2", "got %v, want [dsh:s1:2]", ids(hits))
	})
	t.Run("TaskEndText", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "日志"})
		assert.False(t, len(hits) != 1 || hits[0].Text != "整理日志\n已完成", "got %+v", hits)
	})
	t.Run("StreamFilter", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "记忆", Scopes: []string{"ws-b"}})
		assert.False(t, len(hits) != 1 || hits[0].EventID != "dsh:s2:201", "got %v, want [dsh:s2:201]", ids(hits))
	})
	t.Run("BothTermsFirst", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "记忆 修复", IncludeInjected: true})
		assert.False(t, len(hits) != 3 || hits[0].EventID != "dsh:s1:1", "got %v, want s1:1 (both terms) first of 3", ids(hits))
		for i := 1; i < len(hits); i++ {
			assert.False(t, hits[i].Score > hits[i-1].Score, "scores not descending: %v", hits)
		}
	})
	t.Run("Limit", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "weather", Limit: 7})
		assert.Len(t, hits, 7, "got %d hits, want 7", len(hits))
	})
	t.Run("NoTerms", func(t *testing.T) {
		hits := search(t, recall.Query{Text: " ，。!? "})
		assert.Len(t, hits, 0, "got %v; want no hits", hits)
	})
	t.Run("NoMatch", func(t *testing.T) {
		hits := search(t, recall.Query{Text: "量子"})
		assert.Len(t, hits, 0, "got %v", hits)
	})
}

// Injected episodes are left out inside the candidate query: a large
// index whose newest rows holding a term are all injected still finds the
// older observed one, which a filter after the cap would have lost.
func TestInjectedDoNotTakeCandidateBudget(t *testing.T) {
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	defer s.Close()
	w := recall.DefaultWeights
	evs := []events.Envelope{storetest.Msg("ws-a", 1, events.TypeUserMessage, "s1", map[string]any{"text": "we deploy with helm charts"})}
	for i := uint64(2); i < uint64(2+4*w.PoolCap); i++ {
		d := map[string]any{"text": fmt.Sprintf("Current runtime context %d: remember that we deploy with helm", i), "injected": true}
		evs = append(evs, storetest.Msg("ws-a", i, events.TypeUserMessage, "s1", d))
	}
	for i, end := uint64(len(evs)+1), uint64(len(evs)+1+4*w.SmallCorpus); i < end; i++ {
		evs = append(evs, storetest.Msg("ws-a", i, events.TypeAssistantMessage, "s1", map[string]any{"text": fmt.Sprintf("filler %d about the weather", i)}))
	}
	require.NoError(t, projector.New(s).Fold(context.Background(), evs))
	for _, scopes := range [][]string{nil, {"ws-a"}} {
		res, err := recall.Find(context.Background(), s, recall.Query{Text: "helm", Kind: recall.KindEpisodic, Scopes: scopes,
			Limit: 5, Bytes: -1, NoFloor: true, Timeout: 10 * time.Second})
		require.NoError(t, err)
		assert.False(t, len(res.Items) != 1 || res.Items[0].EventID != "dsh:s1:1", "scopes %v: got %d items %+v, want only dsh:s1:1", scopes, len(res.Items), res.Items)
		res, err = recall.Find(context.Background(), s, recall.Query{Text: "helm", Kind: recall.KindAll, Scopes: scopes,
			Limit: 5, Bytes: -1, NoFloor: true, IncludeInjected: true, Timeout: 10 * time.Second})
		require.NoError(t, err)
		assert.False(t, len(res.Items) != 5 || !slices.Contains(res.Items[0].Flags, recall.FlagInjected), "scopes %v, IncludeInjected: got %+v, want 5 injected echoes", scopes, res.Items)
	}
}
