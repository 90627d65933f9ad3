package projector

import (
	"context"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfidenceOpFold: a confidence op moves its target by its delta,
// clamped to 0–1, in a version of its own whose reason names the
// evidence; a delta that changes nothing, a target of another stream, a
// forgotten target and an op without a delta write nothing.
func TestConfidenceOpFold(t *testing.T) {
	s := openStore(t)
	p := New(s)
	id, other := EntryID("ws-a", 1, 0), EntryID("ws-b", 1, 0)
	conf := func(target string, delta any) map[string]any {
		o := map[string]any{"op": "confidence", "targetId": target, "evidenceEventIds": []string{"s1:4", "s1:5"},
			"reason": "tool-failure: bash failed after the entry was shown", "provenance": "evidence"}
		if delta != nil {
			o["delta"] = delta
		}
		return o
	}
	mustFold(t, p, []events.Envelope{
		remember("ws-a", 1, "Deploy with make ship"),
		remember("ws-b", 1, "Deploy with make ship"),
		opsEvent("ws-a", 2, conf(id, -0.2), conf(id, -0.5), conf(id, nil), conf(other, -0.5)),
		opsEvent("ws-a", 3, conf(id, -0.9), conf(id, -0.1)), // to 0, then nothing more
		opsEvent("ws-a", 4, conf(id, 0.25)),
	})
	assert.InDelta(t, 0.25, mustEntry(t, s, id).Confidence, 1e-9)
	assert.InDelta(t, 1.0, mustEntry(t, s, other).Confidence, 1e-9, "an op of ws-a moved an entry of ws-b")
	assert.Equal(t, []string{
		"v1 add active ",
		"v2 confidence active tool-failure: bash failed after the entry was shown; evidence s1:4, s1:5",
		"v3 confidence active tool-failure: bash failed after the entry was shown; evidence s1:4, s1:5",
		"v4 confidence active tool-failure: bash failed after the entry was shown; evidence s1:4, s1:5",
		"v5 confidence active tool-failure: bash failed after the entry was shown; evidence s1:4, s1:5",
	}, versions(t, s, id))
	e := mustEntry(t, s, id)
	assert.Equal(t, "Deploy with make ship", e.Content, "a confidence op changed the text")

	mustFold(t, p, []events.Envelope{
		ev("ws-a", 5, events.TypeMemoryForget, "", map[string]any{"entryId": id}),
		opsEvent("ws-a", 6, conf(id, 0.5)),
	})
	assert.InDelta(t, 0.25, mustEntry(t, s, id).Confidence, 1e-9, "a forgotten entry moved")
}

// TestAliasAndProcedureOpsStayInTheirStream: an alias is recorded in the
// stream of its event; a procedure op of another stream for an id that
// one stream holds changes nothing; bad ops are skipped and keep later
// ops' positions; replaying the same events gives the same rows.
func TestAliasAndProcedureOpsStayInTheirStream(t *testing.T) {
	proc := func(id, stage string, steps ...string) map[string]any {
		return map[string]any{"op": "procedure", "targetId": id, "evidenceEventIds": []string{"s1:1"}, "reason": stage,
			"provenance": "evidence", "procedure": map[string]any{"id": id, "stage": stage, "trigger": "release",
				"steps": steps, "check": "the last step reports success"}}
	}
	evs := []events.Envelope{
		remember("ws-a", 1, "Database: PostgreSQL 16"),
		opsEvent("ws-a", 2,
			map[string]any{"op": "alias", "alias": "PG", "expansion": "PostgreSQL", "newQuote": "PG 就是 PostgreSQL", "evidenceEventIds": []string{"s1:1"}},
			map[string]any{"op": "alias", "alias": "pg", "expansion": "postgresql"}, // the same pair: the first stays
			map[string]any{"op": "alias", "alias": "PG", "expansion": "PG"},         // skipped
			map[string]any{"op": "alias", "alias": "", "expansion": "x"},            // skipped
			proc("p-00000000000000aa", "P0", "bash go vet ./...", "bash go test ./..."),
			proc("p-00000000000000bb", "P9", "bash x", "bash y"), // unknown stage: skipped
			map[string]any{"op": "add", "title": "after the skipped ones", "content": "after the skipped ones"},
		),
		opsEvent("global", 1, proc("p-00000000000000aa", "P3", "bash go vet ./...", "bash go test ./...")),
		opsEvent("ws-a", 3, proc("p-00000000000000aa", "P1", "bash go vet ./...", "bash go test ./...")),
	}
	s := openStore(t)
	mustFold(t, New(s), evs)
	ctx := context.Background()
	as, err := s.Aliases(ctx, nil)
	require.NoError(t, err)
	require.Len(t, as, 1, "aliases %+v", as)
	assert.Equal(t, "ws-a PG PostgreSQL PG 就是 PostgreSQL", as[0].Scope+" "+as[0].Alias+" "+as[0].Expansion+" "+as[0].Quote)
	as, err = s.Aliases(ctx, []string{"ws-b", "global"})
	require.NoError(t, err)
	assert.Empty(t, as, "another scope's aliases")

	pr, ok, err := s.Procedure(ctx, "p-00000000000000aa")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "ws-a P1 2", pr.Scope+" "+pr.Stage+" "+itoa(pr.Version), "the global op reached a ws-a procedure")
	g, err := s.Procedures(ctx, "global")
	require.NoError(t, err)
	assert.Empty(t, g, "a procedure became global")
	_, ok, _ = s.Procedure(ctx, "p-00000000000000bb")
	assert.False(t, ok, "a procedure with an unknown stage was stored")
	h, err := s.ProcedureHistory(ctx, "p-00000000000000aa")
	require.NoError(t, err)
	require.Len(t, h, 2)
	assert.Equal(t, []string{"P0", "P1"}, []string{h[0].Stage, h[1].Stage})
	assert.Equal(t, []string{"s1:1"}, h[1].Evidence)
	_, ok = getEntry(t, s, EntryID("ws-a", 2, 6))
	assert.True(t, ok, "the add after skipped ops lost its position")

	assert.Equal(t, dump(t, s), foldedDump(t, evs), "a second fold of the same events differs")
}

func itoa(n int64) string { return string(rune('0' + n)) }
