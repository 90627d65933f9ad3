package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entryState is what the ops tests look at in an entries row.
type entryState struct {
	ID, Type, Title, Description, Terms, Content, Tags, Status string
	ConflictGroup, Supersedes, SupersededBy, Provenance        string
	Importance                                                 int
	Confidence                                                 float64
	Version, UpdatedSeq                                        int64
}

func getEntry(t *testing.T, s *sqlstore.Store, id string) (entryState, bool) {
	t.Helper()
	e, ok, err := s.Entry(context.Background(), id)
	if err != nil || !ok {
		return entryState{}, false
	}
	return entryState{ID: e.ID, Type: e.Type, Title: e.Title, Description: e.Description, Terms: e.Terms, Content: e.Content,
		Tags: tagsJSON(e.Tags), Status: e.Status, ConflictGroup: e.ConflictGroup, Supersedes: e.Supersedes,
		SupersededBy: e.SupersededBy, Provenance: string(e.Provenance), Importance: e.Importance, Confidence: e.Confidence,
		Version: e.Version, UpdatedSeq: int64(e.UpdatedSeq)}, true
}

func mustEntry(t *testing.T, s *sqlstore.Store, id string) entryState {
	t.Helper()
	r, ok := getEntry(t, s, id)
	require.True(t, ok, "entry %s: not found", id)
	return r
}

// versions lists an entry's versions as "vN op status reason".
func versions(t *testing.T, s *sqlstore.Store, id string) []string {
	t.Helper()
	var out []string
	for _, v := range history(t, s, id) {
		out = append(out, fmt.Sprintf("v%d %s %s %s", v.Version, v.Op, v.Status, v.Reason))
	}
	return out
}

func opsEvent(stream string, seq uint64, ops ...map[string]any) events.Envelope {
	if ops == nil {
		ops = []map[string]any{}
	}
	return ev(stream, seq, events.TypeMemoryOps, "", map[string]any{
		"checkpoint": "ck-00000000000000" + string(rune('a'+seq%26)) + "0", "session": "s1", "from": 1, "to": seq - 1,
		"distiller": "rules", "model": "rules-v1", "ops": ops,
	})
}

func remember(stream string, seq uint64, content string) events.Envelope {
	return ev(stream, seq, events.TypeMemoryRemember, "", map[string]any{"content": content, "type": "decision"})
}

func TestOpsSupersede(t *testing.T) {
	s := openStore(t)
	p := New(s)
	old := EntryID("ws-a", 1, 0)
	mustFold(t, p, []events.Envelope{
		remember("ws-a", 1, "Database: MySQL 8"),
		ev("ws-a", 2, events.TypeUserMessage, "s1", map[string]any{"text": "not MySQL — we moved to PostgreSQL"}),
		opsEvent("ws-a", 3, map[string]any{
			"op": "supersede", "targetId": old, "oldQuote": "MySQL", "newQuote": "not MySQL — we moved to PostgreSQL",
			"evidenceEventIds": []string{"t:ws-a:2"}, "type": "decision", "title": "Database: PostgreSQL",
			"content": "not MySQL — we moved to PostgreSQL", "importance": 2, "confidence": 0.9,
			"reason": "rules: en-not-but", "provenance": "distiller",
		}),
	})
	neu := EntryID("ws-a", 3, 0)
	o, n := mustEntry(t, s, old), mustEntry(t, s, neu)
	assert.False(t, o.Status != "superseded" || o.SupersededBy != neu || o.Version != 2 || o.UpdatedSeq != 3 || o.Content != "Database: MySQL 8", "old entry: got %+v", o)
	assert.False(t, n.Status != "active" || n.Supersedes != old || n.Title != "Database: PostgreSQL" || n.Type != "decision" ||
		n.Importance != 2 || n.Confidence != 0.9 || n.Version != 1, "new entry: got %+v", n)
	want := `{"eventIds":["t:ws-a:2","t:ws-a:3"],"reason":"rules: en-not-but","source":"distiller","checkpoint":"ck-00000000000000d0"}`
	assert.Equal(t, want, n.Provenance, "provenance: got %s, want %s", n.Provenance, want)
	if got, want := versions(t, s, old), []string{"v1 add active ", "v2 supersede superseded rules: en-not-but; superseded by " + neu}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("old versions: got %q, want %q", got, want)
	}
	if got, want := versions(t, s, neu), []string{"v1 supersede active rules: en-not-but; supersedes " + old}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("new versions: got %q, want %q", got, want)
	}

	t.Run("SupersededIsNoTarget", func(t *testing.T) {
		mustFold(t, p, []events.Envelope{opsEvent("ws-a", 4,
			map[string]any{"op": "revise", "targetId": old, "content": "MySQL 9"},
			map[string]any{"op": "supersede", "targetId": old, "content": "SQLite"},
			map[string]any{"op": "conflict", "targetId": old, "content": "Oracle"},
		)})
		got := mustEntry(t, s, old)
		assert.False(t, got.Version != 2 || got.Status != "superseded", "superseded entry changed: %+v", got)
		for i := range 3 {
			_, ok := getEntry(t, s, EntryID("ws-a", 4, i))
			assert.False(t, ok, "op %d aimed at a superseded entry created an entry", i)
		}
	})
}

func TestOpsConflict(t *testing.T) {
	s := openStore(t)
	p := New(s)
	a := EntryID("ws-a", 1, 0)
	mustFold(t, p, []events.Envelope{
		remember("ws-a", 1, "Database: MySQL 8"),
		opsEvent("ws-a", 2, map[string]any{"op": "add", "content": "unrelated"},
			map[string]any{"op": "conflict", "targetId": a, "content": "数据库不是MySQL而是PostgreSQL", "reason": "supersede not verified"}),
	})
	b := EntryID("ws-a", 2, 1)
	group := ConflictGroupID("ws-a", 2, 1)
	require.True(t, strings.HasPrefix(group, "cg-"), "group id %q", group)
	require.Len(t, group, 19, "group id %q", group)
	ea, eb := mustEntry(t, s, a), mustEntry(t, s, b)
	require.EqualValues(t, "conflict", ea.Status, "got %+v and %+v, want both in conflict group %s", ea, eb, group)
	require.EqualValues(t, "conflict", eb.Status, "got %+v and %+v, want both in conflict group %s", ea, eb, group)
	require.Equal(t, group, ea.ConflictGroup, "got %+v and %+v, want both in conflict group %s", ea, eb, group)
	require.Equal(t, group, eb.ConflictGroup, "got %+v and %+v, want both in conflict group %s", ea, eb, group)
	assert.EqualValues(t, "decision", eb.Type, "a conflict without a type takes the target's: got %s", eb.Type)

	t.Run("JoinsTheGroup", func(t *testing.T) {
		mustFold(t, p, []events.Envelope{opsEvent("ws-a", 3, map[string]any{"op": "conflict", "targetId": b, "content": "SQLite"})})
		c := mustEntry(t, s, EntryID("ws-a", 3, 0))
		assert.False(t, c.Status != "conflict" || c.ConflictGroup != group, "third contender: got %+v, want group %s", c, group)
		got := mustEntry(t, s, b)
		assert.EqualValues(t, 1, got.Version, "a member already in the group got a new version: %+v", got)
	})
	t.Run("ForgetResolves", func(t *testing.T) {
		c := EntryID("ws-a", 3, 0)
		mustFold(t, p, []events.Envelope{opsEvent("ws-a", 4, map[string]any{"op": "forget", "targetId": c, "reason": "wrong"})})
		if got := mustEntry(t, s, b); got.Status != "conflict" {
			t.Errorf("two contenders left, yet %s is %s", b, got.Status)
		}
		mustFold(t, p, []events.Envelope{ev("ws-a", 5, events.TypeMemoryForget, "", map[string]any{"entryId": a})})
		got := mustEntry(t, s, b)
		assert.False(t, got.Status != "active" || got.ConflictGroup != "", "last contender: got %+v, want active outside the group", got)
		v := versions(t, s, b)
		assert.Equal(t, "v2 resolve active conflict group "+group+" has no other contender left", v[len(v)-1], "got versions %q", v)
	})
}

func TestOpsReviseAndForget(t *testing.T) {
	s := openStore(t)
	p := New(s)
	id := EntryID("ws-a", 1, 0)
	mustFold(t, p, []events.Envelope{
		ev("ws-a", 1, events.TypeMemoryRemember, "", map[string]any{"content": "deploy with make release", "description": "old words",
			"tags": []string{"deploy"}, "importance": 3, "type": "procedure"}),
		opsEvent("ws-a", 2, map[string]any{"op": "revise", "targetId": id, "content": "deploy with goreleaser", "description": "",
			"terms": []string{"goreleaser", " ", "goreleaser", "release"}, "provenance": "hand-edit"}),
	})
	got := mustEntry(t, s, id)
	want := entryState{ID: id, Type: "procedure", Title: "deploy with make release", Description: "", Terms: "goreleaser, release",
		Content: "deploy with goreleaser", Tags: `["deploy"]`, Status: "active", Importance: 3, Confidence: 1, Version: 2, UpdatedSeq: 2,
		Provenance: `{"eventIds":["t:ws-a:1","t:ws-a:2"]}`}
	assert.Equal(t, want, got, "revised entry:\n got  %+v\n want %+v", got, want)
	var hits []string
	for _, term := range []string{"goreleaser", "make"} {
		ids, err := s.MatchEntries(context.Background(), `body : "`+term+`"`)
		require.NoError(t, err)
		hits = append(hits, strings.Join(ids, ","))
	}
	assert.False(t, hits[0] != id || hits[1] != "", "index after revise: goreleaser → %q, make → %q; want the entry, then nothing", hits[0], hits[1])

	mustFold(t, p, []events.Envelope{opsEvent("ws-a", 3,
		map[string]any{"op": "forget", "targetId": id, "reason": "hand-edit: block deleted", "provenance": "hand-edit"},
		map[string]any{"op": "revise", "targetId": id, "content": "too late"},
	)})
	got = mustEntry(t, s, id)
	assert.False(t, got.Status != "forgotten" || got.Version != 3 || got.Content != "deploy with goreleaser", "forgotten entry: got %+v", got)
}

func TestOpsAddVerbatimAndSkips(t *testing.T) {
	s := openStore(t)
	p := New(s)
	content := "  - step one\n  - step two\n"
	mustFold(t, p, []events.Envelope{
		remember("ws-b", 1, "belongs to another stream"),
		ev("ws-a", 1, events.TypeMemoryOps, "", json.RawMessage(`{"ops":"not an array"}`)),
		ev("ws-a", 2, events.TypeMemoryOps, "", json.RawMessage(`{"checkpoint":"ck-1","ops":[
			"not an object",
			{"op":"explode","content":"x"},
			{"op":"add"},
			{"op":"revise","targetId":"m-nope","content":"x"},
			{"op":"forget","targetId":"`+EntryID("ws-b", 1, 0)+`"},
			{"op":"ADD","content":`+jsonString(content)+`,"type":"nonsense","importance":"high","tags":["a","a"],"provenance":"hand-edit"},
			{"op":"add","title":"title only","importance":9,"confidence":-1}
		]}`)),
	})
	c, _ := s.Cursor("ws-a")
	require.EqualValues(t, 2, c, "got cursor %d, want 2: ops that do not apply must not stop the fold", c)
	n := len(entriesOf(t, s, sqlstore.EntryFilter{Scopes: []string{"ws-a"}}))
	assert.EqualValues(t, 2, n, "got %d entries in ws-a, want 2", n)
	e5 := mustEntry(t, s, EntryID("ws-a", 2, 5))
	assert.False(t, e5.Content != content || e5.Title != "- step one" || e5.Type != "fact" || e5.Importance != 1 || e5.Tags != `["a"]`, "hand-edit add: got %+v", e5)
	e6 := mustEntry(t, s, EntryID("ws-a", 2, 6))
	assert.False(t, e6.Content != "title only" || e6.Importance != 3 || e6.Confidence != 0, "title-only add: got %+v", e6)
	got := mustEntry(t, s, EntryID("ws-b", 1, 0))
	assert.EqualValues(t, "active", got.Status, "an op reached another stream's entry: %+v", got)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A log of ops folds to the same index in one call, one event per call,
// chunked catch-up, and with the streams in any order.
func TestOpsDeterministic(t *testing.T) {
	a0 := EntryID("ws-a", 1, 0)
	b0 := EntryID("ws-b", 1, 0)
	log := []events.Envelope{
		remember("ws-a", 1, "Database: MySQL 8"),
		remember("ws-b", 1, "use npm"),
		opsEvent("ws-a", 2,
			map[string]any{"op": "add", "content": "tabs over spaces", "tags": []string{"style"}},
			map[string]any{"op": "conflict", "targetId": a0, "content": "PostgreSQL?"}),
		opsEvent("ws-b", 2, map[string]any{"op": "supersede", "targetId": b0, "content": "use pnpm"}),
		opsEvent("ws-a", 3,
			map[string]any{"op": "revise", "targetId": EntryID("ws-a", 2, 0), "content": "tabs, width 4"},
			map[string]any{"op": "forget", "targetId": EntryID("ws-a", 2, 1)}),
		ev("ws-b", 3, events.TypeMemoryForget, "", map[string]any{"entryId": EntryID("ws-b", 2, 0)}),
	}
	want := foldedDump(t, log)
	require.Contains(t, want, `"superseded"`, "the log does not exercise supersede and resolve:\n%s", want)
	require.Contains(t, want, `"resolve"`, "the log does not exercise supersede and resolve:\n%s", want)

	one := openStore(t)
	for _, stream := range []string{"ws-b", "ws-a"} { // the other order, each event alone
		for _, e := range log {
			if e.Stream == stream {
				mustFold(t, New(one), []events.Envelope{e})
			}
		}
	}
	// Re-delivery changes nothing.
	mustFold(t, New(one), log)
	got := dump(t, one)
	assert.Equal(t, want, got, "folded one event at a time:\n%s\nwant\n%s", got, want)
	chunked := openStore(t)
	pc := New(chunked)
	pc.ChunkSize = 1
	require.NoError(t, pc.CatchUp(t.Context(), newFakeSource(log), nil))
	if got := dump(t, chunked); got != want {
		t.Errorf("chunked catch-up:\n%s\nwant\n%s", got, want)
	}
}
