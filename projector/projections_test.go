package projector

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"dshmem/events"
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
		var rows []row
		if err := s.DB().Select(&rows, `SELECT session AS session, stream AS stream, cwd AS cwd, origin AS origin,
			parent AS parent, agent_preset AS agentpreset, started_at AS startedat, ended_at AS endedat,
			first_seq AS firstseq, last_seq AS lastseq, first_time AS firsttime, last_time AS lasttime,
			events AS events, user_turns AS userturns, user_chars AS userchars FROM sessions ORDER BY session, stream`); err != nil {
			t.Fatal(err)
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
		if len(got) != len(want) {
			t.Fatalf("%s: got %d rows %+v, want %+v", name, len(got), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: row %d:\n got  %+v\n want %+v", name, i, got[i], want[i])
			}
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
		if err != nil || !ok || cwd != "/home/u/proj" {
			t.Errorf("got %q %v %v", cwd, ok, err)
		}
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
	if !strings.HasPrefix(id1, "m-") || len(id1) != 18 || id1 == id2 {
		t.Fatalf("got ids %s %s", id1, id2)
	}
	type entryRow struct {
		ID, Type, Title, Tags, Status, Provenance, CreatedAt, UpdatedAt string
		Importance, Version, CreatedSeq, UpdatedSeq                     int64
	}
	get := func(id string) entryRow {
		t.Helper()
		var r entryRow
		if err := s.DB().Get(&r, `SELECT id AS id, type AS type, title AS title, tags AS tags, status AS status,
			provenance AS provenance, created_at AS createdat, updated_at AS updatedat, importance AS importance,
			version AS version, created_seq AS createdseq, updated_seq AS updatedseq FROM entries WHERE id = ?`, id); err != nil {
			t.Fatalf("entry %s: %v", id, err)
		}
		return r
	}
	t1 := ev("ws-a", 1, "", "", nil).Time
	if got, want := get(id1), (entryRow{id1, "preference", "用 pnpm 不用 npm", `["tools","pnpm"]`, "active", `{"eventIds":["t:ws-a:1"]}`, t1, t1, 3, 1, 1, 1}); got != want {
		t.Errorf("entry 1:\n got  %+v\n want %+v", got, want)
	}
	if got := get(id2); got.Type != "fact" || got.Title != strings.Repeat("很长的标题", 32) || got.Tags != "[]" || got.Importance != 1 {
		t.Errorf("entry 2: got %+v", got)
	}
	if got := get(id4); got.Title != "Given Title" || got.Importance != 0 {
		t.Errorf("entry 4: got %+v", got)
	}
	var n int
	s.DB().Get(&n, `SELECT count(*) FROM entries`)
	if n != 3 {
		t.Errorf("got %d entries, want 3 (empty content records nothing)", n)
	}

	t.Run("Forget", func(t *testing.T) {
		mustFold(t, p, []events.Envelope{
			ev("ws-a", 5, events.TypeMemoryForget, "s", map[string]any{"entryId": id1, "reason": "outdated"}),
			ev("ws-a", 6, events.TypeMemoryForget, "s", map[string]any{"entryId": id1}),         // already forgotten
			ev("ws-a", 7, events.TypeMemoryForget, "s", map[string]any{"entryId": "m-unknown"}), // no such entry
			ev("ws-b", 1, events.TypeMemoryForget, "s", map[string]any{"entryId": id2}),         // another stream's entry
			ev("ws-a", 8, events.TypeMemoryForget, "s", json.RawMessage(`"garbage"`)),
		})
		t5 := ev("ws-a", 5, "", "", nil).Time
		if got := get(id1); got.Status != "forgotten" || got.Version != 2 || got.UpdatedAt != t5 || got.UpdatedSeq != 5 || got.CreatedAt != t1 {
			t.Errorf("forgotten entry: got %+v", got)
		}
		if got := get(id2); got.Status != "active" || got.Version != 1 {
			t.Errorf("entry forgotten from another stream: got %+v", got)
		}
		var versions []string
		s.DB().Select(&versions, `SELECT entry_id || ' v' || version || ' ' || op || ' ' || status || ' ' || reason || ' seq ' || seq FROM entry_versions ORDER BY entry_id = ? DESC, entry_id, version`, id1)
		if len(versions) != 4 || versions[0] != id1+" v1 add active  seq 1" || versions[1] != id1+" v2 forget forgotten outdated seq 5" {
			t.Errorf("got versions %q", versions)
		}
		if c, _ := s.Cursor("ws-a"); c != 8 {
			t.Errorf("got cursor %d, want 8: unknown ids must not stop the fold", c)
		}
	})

	t.Run("Indexed", func(t *testing.T) {
		var ids []string
		if err := s.DB().Select(&ids, `SELECT e.id FROM entries_fts f JOIN entries e ON e.n = f.rowid WHERE entries_fts MATCH ? ORDER BY e.id`, `bigrams : "pnpm"`); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] != id1 {
			t.Errorf("got %v, want [%s]", ids, id1)
		}
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
		if got := titleFrom(tc.in); got != tc.want {
			t.Errorf("titleFrom(%.20q…): got %.20q… (%d runes), want %.20q…", tc.in, got, len([]rune(got)), tc.want)
		}
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
	rows, err := s.DB().Query(`SELECT v.type, e.data, v.text, v.injected FROM episode_texts v JOIN events e ON e.stream = v.stream AND e.seq = v.seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var typ, data, text string
		var injected bool
		if err := rows.Scan(&typ, &data, &text, &injected); err != nil {
			t.Fatal(err)
		}
		gt, gi, ok := EpisodeText(typ, json.RawMessage(data))
		if !ok || gt != text || gi != injected {
			t.Errorf("%s %s: view says %q %v, EpisodeText %q %v %v", typ, data, text, injected, gt, gi, ok)
		}
		n++
	}
	var events, want int
	s.DB().Get(&events, `SELECT count(*) FROM events`)
	s.DB().Get(&want, `SELECT count(*) FROM events WHERE type IN ('user/message', 'assistant/message', 'tool/result', 'compaction/summary', 'task/end')`)
	if events != len(all)+len(extra) || n != want-3 {
		t.Errorf("got %d events, %d episodes; want %d events, %d episodes", events, n, len(all)+len(extra), want-3)
	}
}

// Every table of the schema is in the dump or deliberately left out.
func TestDumpCoversSchema(t *testing.T) {
	s := openStore(t)
	var names []string
	if err := s.DB().Select(&names, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, d := range dumpTables {
		covered[d.name] = true
	}
	shadow := []string{"_data", "_idx", "_config", "_docsize", "_content"}
	for _, n := range names {
		isShadow := false
		for _, suf := range shadow {
			if base, ok := strings.CutSuffix(n, suf); ok && covered[base] {
				isShadow = true
			}
		}
		if !covered[n] && !dumpSkipped[n] && !isShadow {
			t.Errorf("table %s is neither dumped nor skipped", n)
		}
	}
}
