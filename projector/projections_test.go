package projector

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSessions(t *testing.T) {
	s := openStore(t)
	p := New(s)
	const sess = "session-1"
	evs := []events.Envelope{
		withCwd(ev("ws-a", 1, events.TypeUserMessage, sess, map[string]any{"text": "先说一句"}), "/early"),
		withCwd(ev("ws-a", 2, events.TypeSessionStart, sess, map[string]any{"origin": "subagent", "parent": "session-0", "agentPreset": "coder"}), "/home/u/proj"),
		ev("ws-a", 3, events.TypeUserMessage, sess, map[string]any{"text": "修复记忆注入"}),
		ev("ws-a", 4, events.TypeUserMessage, sess, map[string]any{"text": "<memory>injected</memory>", "injected": true}),
		ev("ws-a", 5, events.TypeAssistantMessage, sess, map[string]any{"text": "好的"}),
		withCwd(ev("ws-a", 6, events.TypeUserMessage, sess, map[string]any{"text": "  "}), "/elsewhere"),
		ev("ws-a", 7, events.TypeSessionEnd, sess, nil),
		ev("ws-a", 8, events.TypeTurnEnd, "", nil),
		withCwd(ev("global", 1, events.TypeMemoryRemember, sess, map[string]any{"content": "全局"}), "/home/u/proj"),
	}
	type row struct {
		Session, Stream, Cwd, Origin, Parent, AgentPreset, StartedAt, EndedAt string
		FirstSeq, LastSeq                                                     int64
		FirstTime, LastTime                                                   string
		Events, UserTurns, UserChars                                          int64
	}
	read := func() []row {
		ss, err := s.Sessions(context.Background())
		require.NoError(t, err)
		var rows []row
		for _, r := range ss {
			rows = append(rows, row{r.Session, r.Stream, r.Cwd, r.Origin, r.Parent, r.AgentPreset, r.StartedAt, r.EndedAt,
				int64(r.FirstSeq), int64(r.LastSeq), r.FirstTime, r.LastTime, r.Events, r.UserTurns, r.UserChars})
		}
		return rows
	}
	want := []row{
		{sess, "global", "/home/u/proj", "", "", "", "", "", 1, 1, evs[8].Time, evs[8].Time, 1, 0, 0},
		{sess, "ws-a", "/home/u/proj", "subagent", "session-0", "coder", evs[1].Time, evs[6].Time, 1, 7, evs[0].Time, evs[6].Time, 7, 2, 4 + 6},
	}
	check := func(name string) {
		t.Helper()
		got := read()
		require.Len(t, got, len(want), "%s: got %d rows %+v, want %+v", name, len(got), got, want)
		for i := range got {
			assert.Equal(t, want[i], got[i], "%s: row %d:\n got  %+v\n want %+v", name, i, got[i], want[i])
		}
	}
	t.Run("OneFold", func(t *testing.T) {
		mustFold(t, p, evs)
		check("one fold")
	})
	outer := t
	t.Run("OneEventPerFold", func(t *testing.T) {
		s = openStore(outer)
		p = New(s)
		for _, e := range evs {
			mustFold(t, p, []events.Envelope{e})
		}
		check("one event per fold")
	})
	t.Run("SessionCwd", func(t *testing.T) {
		cwd, ok, err := s.SessionCwd(context.Background(), sess)
		assert.False(t, err != nil || !ok || cwd != "/home/u/proj", "got %q %v %v", cwd, ok, err)
		if _, ok, err := s.SessionCwd(context.Background(), "nope"); ok || err != nil {
			t.Errorf("unknown session: got ok %v, %v", ok, err)
		}
	})
}

func TestEntries(t *testing.T) {
	s := openStore(t)
	p := New(s)
	long := strings.Repeat("很长的标题", 40) // 200 runes
	mustFold(t, p, []events.Envelope{
		ev("ws-a", 1, events.TypeMemoryRemember, "s", map[string]any{"content": "\n  用 pnpm 不用 npm\n第二行", "tags": []string{" tools ", "", "tools", "pnpm"}, "importance": 7, "type": "preference"}),
		ev("ws-a", 2, events.TypeMemoryRemember, "s", map[string]any{"content": long, "type": "nonsense", "tags": "not-an-array"}),
		ev("ws-a", 3, events.TypeMemoryRemember, "s", map[string]any{"content": "  ", "title": "empty"}),
		ev("ws-a", 4, events.TypeMemoryRemember, "s", map[string]any{"content": "x", "title": " Given Title ", "importance": -2}),
	})
	id1, id2, id4 := EntryID("ws-a", 1, 0), EntryID("ws-a", 2, 0), EntryID("ws-a", 4, 0)
	require.True(t, strings.HasPrefix(id1, "m-"), "got ids %s %s", id1, id2)
	require.Len(t, id1, 18, "got ids %s %s", id1, id2)
	require.NotEqual(t, id2, id1, "got ids %s %s", id1, id2)
	type entryRow struct {
		ID, Type, Title, Tags, Status, Provenance, CreatedAt, UpdatedAt string
		Importance, Version, CreatedSeq, UpdatedSeq                     int64
	}
	get := func(id string) entryRow {
		t.Helper()
		e := mustRead(t, s, id)
		return entryRow{e.ID, e.Type, e.Title, tagsJSON(e.Tags), e.Status, string(e.Provenance), e.CreatedAt, e.UpdatedAt,
			int64(e.Importance), e.Version, int64(e.CreatedSeq), int64(e.UpdatedSeq)}
	}
	t1 := ev("ws-a", 1, "", "", nil).Time
	got, want := get(id1), (entryRow{id1, "preference", "用 pnpm 不用 npm", `["tools","pnpm"]`, "active", `{"eventIds":["t:ws-a:1"]}`, t1, t1, 3, 1, 1, 1})
	assert.Equal(t, want, got, "entry 1:\n got  %+v\n want %+v", got, want)
	if got := get(id2); got.Type != "fact" || got.Title != strings.Repeat("很长的标题", 32) || got.Tags != "[]" || got.Importance != 1 {
		t.Errorf("entry 2: got %+v", got)
	}
	if got := get(id4); got.Title != "Given Title" || got.Importance != 0 {
		t.Errorf("entry 4: got %+v", got)
	}
	n := len(entriesOf(t, s, sqlstore.EntryFilter{}))
	assert.EqualValues(t, 3, n, "got %d entries, want 3 (empty content records nothing)", n)

	t.Run("Forget", func(t *testing.T) {
		mustFold(t, p, []events.Envelope{
			ev("ws-a", 5, events.TypeMemoryForget, "s", map[string]any{"entryId": id1, "reason": "outdated"}),
			ev("ws-a", 6, events.TypeMemoryForget, "s", map[string]any{"entryId": id1}),         // already forgotten
			ev("ws-a", 7, events.TypeMemoryForget, "s", map[string]any{"entryId": "m-unknown"}), // no such entry
			ev("ws-b", 1, events.TypeMemoryForget, "s", map[string]any{"entryId": id2}),         // another stream's entry
			ev("ws-a", 8, events.TypeMemoryForget, "s", json.RawMessage(`"garbage"`)),
		})
		t5 := ev("ws-a", 5, "", "", nil).Time
		got := get(id1)
		assert.False(t, got.Status != "forgotten" || got.Version != 2 || got.UpdatedAt != t5 || got.UpdatedSeq != 5 || got.CreatedAt != t1, "forgotten entry: got %+v", got)
		if got := get(id2); got.Status != "active" || got.Version != 1 {
			t.Errorf("entry forgotten from another stream: got %+v", got)
		}
		var versions []string
		ids := []string{id1}
		for _, e := range entriesOf(t, s, sqlstore.EntryFilter{}) {
			if e.ID != id1 {
				ids = append(ids, e.ID)
			}
		}
		slices.Sort(ids[1:])
		for _, id := range ids {
			for _, v := range history(t, s, id) {
				versions = append(versions, fmt.Sprintf("%s v%d %s %s %s seq %d", v.EntryID, v.Version, v.Op, v.Status, v.Reason, v.Seq))
			}
		}
		assert.False(t, len(versions) != 4 || versions[0] != id1+" v1 add active  seq 1" || versions[1] != id1+" v2 forget forgotten outdated seq 5", "got versions %q", versions)
		c, _ := s.Cursor("ws-a")
		assert.EqualValues(t, 8, c, "got cursor %d, want 8: unknown ids must not stop the fold", c)
	})

	t.Run("Indexed", func(t *testing.T) {
		ids, err := s.MatchEntries(context.Background(), `bigrams : "pnpm"`)
		require.NoError(t, err)
		assert.False(t, len(ids) != 1 || ids[0] != id1, "got %v, want [%s]", ids, id1)
	})
}

func TestTitleFrom(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one line", "one line"},
		{"\n\n  second \nthird", "second"},
		{strings.Repeat("a", 161), strings.Repeat("a", 160)},
		{strings.Repeat("记", 160) + "忆", strings.Repeat("记", 160)},
		{strings.Repeat("é", 200), strings.Repeat("é", 160)},
	} {
		got := titleFrom(tc.in)
		assert.Equal(t, tc.want, got, "titleFrom(%.20q…): got %.20q… (%d runes), want %.20q…", tc.in, got, len([]rune(got)), tc.want)
	}
}

// The view the audit SQL sees and Search's text must be the text the
// projector indexed.
func TestEpisodeTextMatchesView(t *testing.T) {
	all, _ := mixed()
	extra := []events.Envelope{
		ev("ws-x", 1, events.TypeTaskEnd, "s", map[string]any{"taskId": "t1", "request": "\n做点事\n", "result": "done\n"}),
		ev("ws-x", 2, events.TypeTaskEnd, "s", map[string]any{"taskId": "t2", "result": "only result"}),
		ev("ws-x", 3, events.TypeToolResult, "s", map[string]any{"name": "bash", "ok": false, "text": "error: parseHTTPRequest"}),
		ev("ws-x", 4, events.TypeUserMessage, "s", map[string]any{"text": "<reminder>记忆</reminder>", "injected": true}),
		ev("ws-x", 5, events.TypeUserMessage, "s", map[string]any{"text": 42}),        // not text: events row only
		ev("ws-x", 6, events.TypeAssistantMessage, "s", map[string]any{"text": "……"}), // no terms
		ev("ws-x", 7, events.TypeCompactionSummary, "s", nil),
	}
	s := openStore(t)
	mustFold(t, New(s), append(all, extra...))
	ctx := context.Background()
	texts, err := s.EpisodeTexts(ctx)
	require.NoError(t, err)
	n := 0
	for _, v := range texts {
		gt, gi, ok := EpisodeText(v.Type, v.Data)
		assert.False(t, !ok || gt != v.Text || gi != v.Injected, "%s %s: view says %q %v, EpisodeText %q %v %v", v.Type, v.Data, v.Text, v.Injected, gt, gi, ok)
		n++
	}
	all2, err := s.Events(ctx, sqlstore.EventFilter{})
	require.NoError(t, err)
	events, want := len(all2), 0
	for _, e := range all2 {
		switch e.Type {
		case "user/message", "assistant/message", "tool/result", "compaction/summary", "task/end":
			want++
		}
	}
	assert.False(t, events != len(all)+len(extra) || n != want-3, "got %d events, %d episodes; want %d events, %d episodes", events, n, len(all)+len(extra), want-3)
}
