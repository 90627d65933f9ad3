package recall_test

import (
	"slices"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfidenceRanksDown chooses Weights.Confidence: two entries with
// the same text, one moved to confidence 0.3 by a confidence op, rank
// the 1.0 one first and flag the other low-confidence; a 0.3 entry that
// holds the whole query still ranks above a 1.0 entry that holds one of
// its three rare words. With the weight at 0 the first check fails (the
// twins tie); it passes up to 1.
func TestConfidenceRanksDown(t *testing.T) {
	f := newMemFixture(t)
	text := map[string]any{"content": "Deploy the zorblat service with quixmake ship on frobnitz hosts"}
	a := f.add("a", text)
	b := f.add("b", text)
	partial := f.add("partial", map[string]any{"content": "The zorblat service owns the queue"})
	whole := f.add("whole", map[string]any{"content": "zorblat quixmake frobnitz: how we ship"})
	low := func(id string) map[string]any {
		return map[string]any{"op": "confidence", "targetId": id, "delta": -0.7, "reason": "tool-failure", "provenance": "evidence"}
	}
	f.apply(f.event(f.stream, events.TypeMemoryOps, "", map[string]any{"checkpoint": "ck-0000000000000001",
		"ops": []map[string]any{low(a), low(whole)}}))

	res := f.recall(recall.Query{Text: "zorblat quixmake frobnitz", Scopes: []string{f.stream}})
	ra, rb := rankOf(res, a), rankOf(res, b)
	require.True(t, ra >= 0 && rb >= 0, "got %v", ids(res))
	assert.Less(t, rb, ra, "the 1.0 entry must rank above its 0.3 twin: got %v", ids(res))
	for _, it := range res.Items {
		if it.ID == a {
			assert.True(t, slices.Contains(it.Flags, recall.FlagLowConfidence), "flags %v", it.Flags)
			assert.InDelta(t, 0.3, it.Confidence, 1e-9)
		}
		if it.ID == b {
			assert.False(t, slices.Contains(it.Flags, recall.FlagLowConfidence), "flags %v", it.Flags)
		}
	}
	rw, rp := rankOf(res, whole), rankOf(res, partial)
	require.True(t, rw >= 0, "got %v", ids(res))
	assert.True(t, rp < 0 || rw < rp, "a 0.3 entry holding the whole query fell below a 1.0 entry holding a third of it: got %v", ids(res))
}

// TestAliasExpansion: an alias of a queried scope expands the line that
// names either side, as a whole word for ASCII; an alias of another
// scope does not; the result says what was used.
func TestAliasExpansion(t *testing.T) {
	f := newMemFixture(t)
	pg := f.add("pg", map[string]any{"content": "数据库用的是 PostgreSQL 16"})
	f.apply(f.event(f.stream, events.TypeMemoryOps, "", map[string]any{"checkpoint": "ck-0000000000000002",
		"ops": []map[string]any{{"op": "alias", "alias": "PG", "expansion": "PostgreSQL", "newQuote": "PG 就是 PostgreSQL"}}}))
	f.apply(f.event("ws-00000000000000000009", events.TypeMemoryOps, "", map[string]any{"checkpoint": "ck-0000000000000003",
		"ops": []map[string]any{{"op": "alias", "alias": "数据", "expansion": "zorblat"}}}))

	res := f.recall(recall.Query{Text: "PG 版本", Scopes: []string{f.stream}})
	assert.Equal(t, 0, rankOf(res, pg), "got %v", ids(res))
	assert.Equal(t, []string{"PG → PostgreSQL"}, res.Expanded)

	res = f.recall(recall.Query{Text: "PGX 版本", Scopes: []string{f.stream}})
	assert.Empty(t, res.Expanded, "PG matched inside PGX")
	res = f.recall(recall.Query{Text: "PG 版本", Scopes: []string{"ws-00000000000000000009"}})
	assert.Empty(t, res.Expanded, "an alias of another scope was used")
	assert.Less(t, rankOf(res, pg), 0)
}
