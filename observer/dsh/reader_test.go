package dsh

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixtureWant struct {
	file     string
	id       string
	byType   map[string]int
	userSaid int // user/message with injected=false
	unknown  int
}

var fixtures = []fixtureWant{
	{"advanced-toolchain--session.jsonl", "11111111-1111-4111-8111-111111111111",
		map[string]int{"session/start": 1, "user/message": 1, "tool/call": 5, "tool/result": 5, "assistant/message": 1, "turn/end": 1}, 1, 0},
	{"compaction-recovery--session.jsonl", "{{sessionId}}",
		map[string]int{"session/start": 1, "user/message": 2, "tool/call": 1, "tool/result": 1, "compaction/summary": 1, "assistant/message": 1, "turn/end": 1}, 1, 0},
	{"goal-multi-turn-actions--session.jsonl", "{{sessionId}}",
		map[string]int{"session/start": 1, "user/message": 4, "tool/call": 11, "tool/result": 11, "assistant/message": 4, "turn/end": 2}, 0, 0},
	{"permission-policy-context--session.jsonl", "{{sessionId}}",
		map[string]int{"session/start": 1, "user/message": 9, "tool/call": 3, "tool/result": 3, "assistant/message": 4, "turn/end": 4}, 4, 0},
	{"subagent-continuable--session.1.jsonl", "33333333-3333-4333-8333-333333333333",
		map[string]int{"session/start": 1, "user/message": 4, "assistant/message": 2, "turn/end": 3}, 3, 0},
	{"live/--tmp-dshlive-proj--/session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68/session.jsonl.zstd", "session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68",
		map[string]int{"session/start": 1, "user/message": 2, "tool/call": 1, "tool/result": 1, "assistant/message": 1, "turn/end": 1}, 1, 0},
}

// TestFixtures reads every fixture as JSONL and as a host-framed
// .jsonl.zstd (several batch sizes) and checks both give the same golden
// envelopes.
func TestFixtures(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(filepath.Base(fx.file), func(t *testing.T) {
			dir := t.TempDir()
			lines := fixtureLines(t, filepath.Join(fixtureDir, fx.file))
			plain := writeJSONLFile(t, dir, "plain--session.jsonl", lines)
			ref, err := ReadFile(plain)
			require.NoError(t, err, "ReadFile(jsonl)")
			checkFixture(t, fx, ref)
			for _, batch := range []int{1, 4, 1000} {
				zp, _ := writeZstdFile(t, dir, "z--session.jsonl.zstd", lines, batch)
				got, err := ReadFile(zp)
				require.NoError(t, err, "ReadFile(zstd, batch %d)", batch)
				sameEnvelopes(t, got.Events, ref.Events)
				require.EqualValues(t, 0, got.TornBytes, "batch %d: torn %d frames %d", batch, got.TornBytes, got.Stats.Frames)
				require.NotEqualValues(t, 0, got.Stats.Frames, "batch %d: torn %d frames %d", batch, got.TornBytes, got.Stats.Frames)
			}
			// The original file as it is on disk.
			orig, err := ReadFile(filepath.Join(fixtureDir, fx.file))
			require.NoError(t, err, "ReadFile(original)")
			sameEnvelopes(t, orig.Events, ref.Events)
		})
	}
}

func checkFixture(t *testing.T, fx fixtureWant, s Session) {
	t.Helper()
	assert.Equal(t, fx.id, s.ID, "session id: got %q, want %q", s.ID, fx.id)
	byType := map[string]int{}
	ids := map[string]bool{}
	userSaid := 0
	for _, e := range s.Events {
		byType[e.Type]++
		assert.False(t, ids[e.ID], "duplicate envelope id %s", e.ID)
		ids[e.ID] = true
		assert.False(t, e.Session != fx.id || !strings.HasPrefix(e.ID, "dsh:"+fx.id+":") || !events.KnownType(e.Type), "bad envelope %s", envKey(e))
		if e.Type != events.TypeUserMessage {
			continue
		}
		var d payload.UserMessage
		err := payload.Unmarshal(e.Data, &d)
		require.NoError(t, err, "%s: got %s (%v), want a user message with its source", envKey(e), e.Data, err)
		require.NotNil(t, d.Source, "%s: got %s (%v), want a user message with its source", envKey(e), e.Data, err)
		if !d.Injected {
			userSaid++
			// Nothing a plugin or the host wrote may pass as user-typed.
			if d.Source.Kind != "user" && d.Source.Kind != "coordinator" {
				t.Errorf("source %q not marked injected: %s", d.Source.Kind, envKey(e))
			}
			assert.False(t, strings.HasPrefix(d.Text, "Current runtime context") || strings.Contains(d.Text, "<system-reminder>") ||
				strings.Contains(d.Text, "<goal_round>") || strings.Contains(d.Text, "automatically generated checkpoint"), "injected text marked as user-typed: %s", envKey(e))
		}
	}
	for typ, n := range fx.byType {
		assert.Equal(t, n, byType[typ], "%s: got %d, want %d", typ, byType[typ], n)
	}
	assert.Len(t, byType, len(fx.byType), "types: got %v, want %v", byType, fx.byType)
	assert.Equal(t, fx.userSaid, userSaid, "user-typed messages: got %d, want %d", userSaid, fx.userSaid)
	assert.False(t, len(s.Stats.Unknown) != fx.unknown || len(s.Stats.Malformed) != 0, "stats: %v", s.Stats)
	assert.Equal(t, len(s.Events), s.Stats.Events, "Stats.Events %d != %d envelopes", s.Stats.Events, len(s.Events))
}

// TestGoldenEnvelopes pins a few envelopes exactly.
func TestGoldenEnvelopes(t *testing.T) {
	sessions := readTree(t, fixtureDir)
	byID := map[string]events.Envelope{}
	for _, s := range sessions {
		for _, e := range s.Events {
			byID[e.ID] = e
		}
	}
	golden := []string{
		`{"v":1,"stream":"","seq":0,"id":"dsh:33333333-3333-4333-8333-333333333333:header","type":"session/start","time":"2026-09-10T00:26:41.000Z","session":"33333333-3333-4333-8333-333333333333","cwd":"{{cwd}}","data":{"origin":"subagent","parent":"11111111-1111-4111-8111-111111111111","delegationDepth":1}}`,
		// Spliced into the inbox, never consumed by a turn (turn 3 failed): still a user message.
		`{"v":1,"stream":"","seq":0,"id":"dsh:33333333-3333-4333-8333-333333333333:7.0","type":"user/message","time":"2026-08-10T10:25:26.278Z","session":"33333333-3333-4333-8333-333333333333","cwd":"{{cwd}}","data":{"text":"Now reply with exactly THIRD_OK.","source":{"kind":"coordinator","form":"relay"},"injected":false,"messageId":"755c76db-6ee8-432d-a2d0-f8a3b7914e08"}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:33333333-3333-4333-8333-333333333333:36","type":"turn/end","time":"2026-08-04T05:30:09.122Z","session":"33333333-3333-4333-8333-333333333333","cwd":"{{cwd}}","data":{"reason":"error","error":"snapshot disk full","turn":3}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:{{sessionId}}:20","type":"compaction/summary","time":"2026-08-07T17:23:21.725Z","session":"{{sessionId}}","cwd":"{{cwd}}","data":{"compactionId":"338e88fa-e78b-4d49-bd38-8f919e85f5e1","text":"The request established a durable compaction premise."}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:11111111-1111-4111-8111-111111111111:62","type":"tool/call","time":"2026-08-12T18:21:43.531Z","session":"11111111-1111-4111-8111-111111111111","cwd":"{{cwd}}","data":{"name":"cordis_undefine","args":{"pluginId":"snap-1"},"callId":"advanced-undefine","turn":1,"step":5}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:11111111-1111-4111-8111-111111111111:63","type":"tool/result","time":"2026-08-12T18:21:43.537Z","session":"11111111-1111-4111-8111-111111111111","cwd":"{{cwd}}","data":{"name":"cordis_undefine","ok":true,"text":"Removed dynamic Plugin snap-1 and all of its Packages.","callId":"advanced-undefine","turn":1,"step":5}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68:3.0","type":"user/message","time":"2026-11-29T22:41:22.672Z","session":"session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68","cwd":"/tmp/dshlive/proj","data":{"text":"Remember that our database is PostgreSQL 16; list the files here.","source":{"kind":"user"},"injected":false,"messageId":"3f093c85-921b-4b0f-b041-b286bdda2db5"}}`,
		`{"v":1,"stream":"","seq":0,"id":"dsh:session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68:53","type":"assistant/message","time":"2026-11-29T22:41:22.834Z","session":"session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68","cwd":"/tmp/dshlive/proj","data":{"text":"Noted: Remember that our database is PostgreSQL 16; list the files here. (fake model)","turn":1,"step":2}}`,
	}
	for _, g := range golden {
		var want events.Envelope
		require.NoError(t, json.Unmarshal([]byte(g), &want))
		got, ok := byID[want.ID]
		if !assert.True(t, ok, "missing %s", want.ID) {
			continue
		}
		assert.Equal(t, envKey(want), envKey(got), "got  %s\nwant %s", envKey(got), envKey(want))
	}
	// A failed tool result and a runtime-context snapshot.
	var failed payload.ToolResult
	err := payload.Unmarshal(byID["dsh:{{sessionId}}:447"].Data, &failed)
	assert.False(t, err != nil || failed.OK == nil || *failed.OK || failed.Name != "write", "tool/result 447: got %+v (%v), want ok=false name=write", failed, err)
	var snap payload.UserMessage
	if err := payload.Unmarshal(byID["dsh:session-f89a0fe3-a8e2-43d3-89fc-ea47ed224b68:8"].Data, &snap); err != nil ||
		!snap.Injected || snap.Source == nil || snap.Source.Kind != "plugin" || snap.Source.Form != "snapshot" {
		t.Errorf("runtime context snapshot: got %+v (%v), want injected plugin snapshot", snap.Source, err)
	}
}

func TestStatsString(t *testing.T) {
	sessions := readTree(t, fixtureDir)
	tot := Total(sessions)
	assert.False(t, tot.Files != 6 || tot.Sessions != 6 || tot.Events != 96 || len(tot.Unknown) != 0, "total: %v", tot)
	s1, s2 := tot.String(), Total(sessions).String()
	assert.False(t, s1 != s2 || !strings.Contains(s1, "skipped{agent/inbox/spliced="), "String not stable or incomplete: %s", s1)
	t.Log(s1)
}

func TestUnknownAndIgnorable(t *testing.T) {
	dir := t.TempDir()
	lines := [][]byte{
		[]byte(`{"type":"session","version":0,"id":"s1","createdAt":1786000000123,"cwd":"/p","delegationDepth":0}`),
		[]byte(`{"type":"future/thing","seq":0,"time":1786000000124,"data":{}}`),
		[]byte(`{"type":"future/other","seq":1,"time":1786000000125,"data":{},"ignorable":true}`),
		[]byte(`{"type":"user/message","seq":2,"time":1786000000126,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"plugin","plugin":"dshmem","form":"recall"}}}`),
		[]byte(`{"type":"user/message","seq":3,"time":1786000000127,"data":{"content":[{"type":"text","text":"no source"}]}}`),
		[]byte(`{"type":"tool/call","time":1786000000128,"data":{}}`),
		[]byte(`{"type":"tool/result","seq":5,"time":1786000000129,"data":{"turn":1,"step":1,"message":{"content":[{"type":"tool-result","toolCallId":"c9","content":"boom","isError":false}]},"error":{"message":"exit 1"}}}`),
	}
	s, err := ReadFile(writeJSONLFile(t, dir, "x--session.jsonl", lines))
	require.NoError(t, err)
	assert.False(t, s.Stats.Unknown["future/thing"] != 1 || s.Stats.Skipped["future/other"] != 1 || s.Stats.Malformed["tool/call"] != 1, "stats: got %v", s.Stats)
	assert.EqualValues(t, "2026-08-06T07:06:40.123Z", s.Events[0].Time, "time: got %s, want 2026-08-06T07:06:40.123Z", s.Events[0].Time)
	for _, e := range s.Events {
		if e.Type == events.TypeUserMessage && !strings.Contains(string(e.Data), `"injected":true`) {
			t.Errorf("want injected: %s", envKey(e))
		}
	}
	last := s.Events[len(s.Events)-1]
	want := `{"name":"","ok":false,"text":"boom","error":"exit 1","callId":"c9","turn":1,"step":1}`
	assert.Equal(t, want, string(last.Data), "tool/result: got %s, want %s", last.Data, want)
}

func TestNotSession(t *testing.T) {
	dir := t.TempDir()
	p := writeJSONLFile(t, dir, "x--session.jsonl", [][]byte{[]byte(`{"type":"user/message","seq":0}`)})
	_, err := ReadFile(p)
	require.ErrorIs(t, err, ErrNotSession, "got %v, want ErrNotSession", err)
	empty := filepath.Join(dir, "e--session.jsonl.zstd")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	if _, err := ReadFile(empty); !errors.Is(err, ErrNoHeader) {
		t.Fatalf("got %v, want ErrNoHeader", err)
	}
}
