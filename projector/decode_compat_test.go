package projector

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"

	"github.com/stretchr/testify/require"
)

// The folds read event data through events/payload. Before that, each
// fold declared its own struct; the functions named old… below are those
// decoders as they were (commit 0745809), kept as the oracle that the
// folds read every input as they did: replay of an existing log must give
// the same projections, byte for byte. FuzzDecodeAsBefore holds the two
// to each other on the data of testdata and on whatever the fuzzer makes
// of it. A deliberate change of what a fold reads changes an oracle here,
// in the same commit, with the reason.

// FuzzDecodeAsBefore checks, for one event's data under one type, that
// every fold reading that type sees what it saw before events/payload.
func FuzzDecodeAsBefore(f *testing.F) {
	for _, rel := range []string{"payload/v1.jsonl", "payload/older.jsonl", "segments/expected.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "testdata", rel))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var x struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(l, &x); err != nil {
				f.Fatal(err)
			}
			f.Add(x.Type, []byte(x.Data))
		}
	}
	for _, c := range []struct{ typ, data string }{
		{events.TypeMemoryRemember, `{"content":"c","Tags":["a",1],"IMPORTANCE":2.5,"title":null}`},
		{events.TypeMemoryRemember, `{"content":"c","tags":{"a":1},"importance":1e400}`},
		{events.TypeMemoryRemember, `{"content":"c","terms":["a"]}`},
		{events.TypeMemoryRemember, `{"content":"c","content":5}`},
		{events.TypeMemoryOps, `{"checkpoint":"ck","ops":[{"op":" Revise ","targetId":"m","terms":null,"tags":null,"importance":null,"confidence":null}]}`},
		{events.TypeMemoryOps, `{"checkpoint":"ck","ops":[{"op":"add","title":"t","terms":5,"tags":"x","description":null,"evidenceEventIds":["a",2]}]}`},
		{events.TypeMemoryOps, `{"checkpoint":1,"ops":[]}`},
		{events.TypeUserMessage, `{"text":"t","injected":"yes"}`},
		{events.TypeCompactionSummary, `{"compactionId":"c","text":"t","injected":1}`},
		{events.TypeSessionStart, `{"origin":5,"parent":"p","agentPreset":"a","origin":"top"}`},
		{events.TypeSessionEnd, `{"summary":" s ","reason":7}`},
		{events.TypeMemoryForget, ``},
		{events.TypeMemoryOps, `null`},
	} {
		f.Add(c.typ, []byte(c.data))
	}

	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		ev := &events.Envelope{Stream: "ws-0123456789abcdef0123", Seq: 7, ID: "e-7", Type: typ,
			Time: "2026-08-18T10:00:00.000+08:00", Session: "s-env", Data: data}

		text, injected, ok := EpisodeText(typ, data)
		wtext, winjected, wok := oldEpisodeText(typ, data)
		if typ == events.TypeCompactionSummary && !wok && badInjected(data) {
			// The one deliberate change: a summary whose injected is not
			// a boolean was no episode (it shared user/message's
			// decoder) but kept its day-file block. No producer writes
			// injected on a summary; payload reads it best effort, so
			// the episode is indexed, not flagged, and the block stays.
			wtext, winjected, wok = text, injected, ok
		}
		if text != wtext || injected != winjected || ok != wok {
			t.Fatalf("EpisodeText(%s, %s): got %q %v %v, want %q %v %v", typ, data, text, injected, ok, wtext, winjected, wok)
		}

		day, b, ok := BlockOf(ev)
		wday, wb, wok := oldBlockOf(ev)
		if day != wday || !reflect.DeepEqual(b, wb) || ok != wok {
			t.Fatalf("BlockOf(%s %s): got %q %+v %v, want %q %+v %v", typ, data, day, b, ok, wday, wb, wok)
		}

		dir, ok := registeredDir(ev)
		wdir, wok := oldRegisteredDir(ev)
		if dir != wdir || ok != wok {
			t.Fatalf("registeredDir(%s): got %q %v, want %q %v", data, dir, ok, wdir, wok)
		}

		switch typ {
		case events.TypeSessionStart:
			var d payload.SessionStart
			_ = payload.Unmarshal(data, &d)
			got := [3]string{d.Origin, d.Parent, d.AgentPreset}
			if want := oldSessionStart(data); got != want {
				t.Fatalf("session/start %s: got %q, want %q", data, got, want)
			}

		case events.TypeMemoryRemember:
			e, ok := rememberEntry(ev)
			we, wok := oldRememberEntry(ev)
			if ok != wok || !reflect.DeepEqual(e, we) {
				t.Fatalf("memory/remember %s: got %+v %v, want %+v %v", data, e, ok, we, wok)
			}

		case events.TypeMemoryForget:
			// The fold acts on a forget that decodes and names an entry.
			var d payload.Forget
			acts := payload.Unmarshal(data, &d) == nil && d.EntryID != ""
			id, reason, wok := oldForget(data)
			wacts := wok && id != ""
			if acts != wacts || acts && (d.EntryID != id || d.Reason != reason) {
				t.Fatalf("memory/forget %s: got %+v %v, want %q %q %v", data, d, acts, id, reason, wacts)
			}

		case events.TypeMemoryShown:
			// The fold acts on a shown that decodes and lists entries.
			var d payload.Shown
			acts := payload.Unmarshal(data, &d) == nil && len(d.Entries) > 0
			entries, session, wok := oldShown(data)
			wacts := wok && len(entries) > 0
			if acts != wacts || acts && (!reflect.DeepEqual(d.Entries, entries) || d.Session != session) {
				t.Fatalf("memory/shown %s: got %+v %v, want %q %q %v", data, d, acts, entries, session, wacts)
			}

		case events.TypeMemoryOps:
			compareOps(t, ev)
		}
	})
}

// compareOps checks that every op of a memory/ops event makes the entry
// it made before, as an add (newEntry) and as a revise of a fixed entry.
func compareOps(t *testing.T, ev *events.Envelope) {
	var d payload.Ops
	err := payload.Unmarshal(ev.Data, &d)
	var w oldOpsData
	werr := json.Unmarshal(ev.Data, &w)
	if werr != nil {
		// The fold skipped the event; now it must find no op either.
		if err == nil && len(d.Ops) > 0 {
			t.Fatalf("memory/ops %s: got %d ops, want the event skipped (%v)", ev.Data, len(d.Ops), werr)
		}
		return
	}
	require.NoError(t, err, "memory/ops %s: got %v, want it to decode", ev.Data, err)
	require.Equal(t, w.Checkpoint, d.Checkpoint, "memory/ops %s: got checkpoint %q and %d ops, want %q and %d", ev.Data, d.Checkpoint, len(d.Ops), w.Checkpoint, len(w.Ops))
	require.Len(t, d.Ops, len(w.Ops), "memory/ops %s: got checkpoint %q and %d ops, want %q and %d", ev.Data, d.Checkpoint, len(d.Ops), w.Checkpoint, len(w.Ops))
	base := entry{id: "m-base", scope: ev.Stream, typ: payload.TypeRule, title: "Base", description: "base description",
		terms: "a, b", content: "base content", tags: []string{"x"}, importance: 2, confidence: 0.5, status: statusActive, version: 3}
	for i, raw := range w.Ops {
		o := &d.Ops[i]
		name := strings.ToLower(strings.TrimSpace(o.Op))
		var wo oldOpItem
		if json.Unmarshal(raw, &wo) != nil {
			require.EqualValues(t, "", name, "op %d %s: does not decode, but got op %q", i, raw, o.Op)
			continue
		}
		require.Equal(t, strings.ToLower(strings.TrimSpace(wo.Op)), name, "op %d %s: got %+v, want %+v", i, raw, o, wo)
		require.Equal(t, wo.TargetID, o.TargetID, "op %d %s: got %+v, want %+v", i, raw, o, wo)
		require.Equal(t, wo.Reason, o.Reason, "op %d %s: got %+v, want %+v", i, raw, o, wo)
		require.Equal(t, wo.Provenance, o.Provenance, "op %d %s: got %+v, want %+v", i, raw, o, wo)
		require.True(t, reflect.DeepEqual(o.EvidenceEventIDs, wo.EvidenceEventIDs), "op %d %s: got %+v, want %+v", i, raw, o, wo)
		for _, typ := range []string{"", payload.TypeDecision} {
			e, ok := newEntry(ev, i, o, typ)
			we, wok := oldNewEntry(ev, i, &wo, typ)
			if ok != wok || ok && !reflect.DeepEqual(*e, *we) {
				t.Fatalf("op %d %s: new entry: got %+v %v, want %+v %v", i, raw, e, ok, we, wok)
			}
		}
		e, we := base, base
		e.tags, we.tags = []string{"x"}, []string{"x"}
		changed, wchanged := e.revise(o), oldRevise(&we, &wo)
		require.Equal(t, wchanged, changed, "op %d %s: revise: got %+v %v, want %+v %v", i, raw, e, changed, we, wchanged)
		require.True(t, reflect.DeepEqual(e, we), "op %d %s: revise: got %+v %v, want %+v %v", i, raw, e, changed, we, wchanged)
	}
}

// badInjected reports whether data's text decodes and its injected does
// not.
func badInjected(data []byte) bool {
	var text struct {
		Text string `json:"text"`
	}
	var flag struct {
		Injected bool `json:"injected"`
	}
	return json.Unmarshal(data, &text) == nil && json.Unmarshal(data, &flag) != nil
}

// The oracle: the decoders of the folds as of commit 0745809.

var oldEntryTypes = map[string]bool{
	"preference": true, "decision": true, "architecture": true, "rule": true,
	"fact": true, "fix": true, "procedure": true,
}

func oldEpisodeText(typ string, data json.RawMessage) (text string, injected bool, ok bool) {
	switch typ {
	case events.TypeUserMessage, events.TypeAssistantMessage, events.TypeToolResult, events.TypeCompactionSummary:
		var d struct {
			Text     string `json:"text"`
			Injected bool   `json:"injected"`
		}
		if json.Unmarshal(data, &d) != nil {
			return "", false, false
		}
		text, injected = d.Text, d.Injected
	case events.TypeTaskEnd:
		var d struct {
			Request string `json:"request"`
			Result  string `json:"result"`
		}
		if json.Unmarshal(data, &d) != nil {
			return "", false, false
		}
		text = strings.Trim(d.Request+"\n"+d.Result, "\n")
	default:
		return "", false, false
	}
	return text, injected, text != ""
}

func oldBlockOf(ev *events.Envelope) (day string, b Block, ok bool) {
	var kind, id, text string
	switch ev.Type {
	case events.TypeCompactionSummary:
		var d struct {
			CompactionID string `json:"compactionId"`
			Text         string `json:"text"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || d.CompactionID == "" {
			return "", Block{}, false
		}
		kind, id, text = "compaction", d.CompactionID, d.Text
	case events.TypeSessionEnd:
		var d struct {
			Summary string `json:"summary"`
		}
		if json.Unmarshal(ev.Data, &d) != nil || strings.TrimSpace(d.Summary) == "" || ev.Session == "" {
			return "", Block{}, false
		}
		kind, id, text = "session", ev.Session, d.Summary
	default:
		return "", Block{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, ev.Time)
	if err != nil || len(ev.Time) < 10 || !dayRE.MatchString(ev.Time[:10]) {
		return "", Block{}, false
	}
	return ev.Time[:10], Block{
		SessionBlock: markdown.SessionBlock{Kind: kind, ID: id, Time: ev.Time, Stream: ev.Stream, Session: ev.Session, Text: text},
		Seq:          ev.Seq,
		At:           t.UnixNano(),
	}, true
}

func oldRegisteredDir(ev *events.Envelope) (string, bool) {
	if ev.Type != events.TypeScopeRegister {
		return "", false
	}
	var d struct {
		Dir string `json:"dir"`
	}
	if json.Unmarshal(ev.Data, &d) != nil || d.Dir == "" {
		return "", false
	}
	return d.Dir, true
}

func oldSessionStart(data []byte) [3]string {
	var d struct {
		Origin      string `json:"origin"`
		Parent      string `json:"parent"`
		AgentPreset string `json:"agentPreset"`
	}
	_ = json.Unmarshal(data, &d)
	return [3]string{d.Origin, d.Parent, d.AgentPreset}
}

func oldForget(data []byte) (id, reason string, ok bool) {
	var d struct {
		EntryID string `json:"entryId"`
		Reason  string `json:"reason"`
	}
	if json.Unmarshal(data, &d) != nil {
		return "", "", false
	}
	return d.EntryID, d.Reason, true
}

func oldShown(data []byte) ([]string, string, bool) {
	var d struct {
		Entries []string `json:"entries"`
		Session string   `json:"session"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil, "", false
	}
	return d.Entries, d.Session, true
}

type oldRememberData struct {
	Content     string          `json:"content"`
	Title       string          `json:"title"`
	Type        string          `json:"type"`
	Description string          `json:"description"`
	Terms       string          `json:"terms"`
	Tags        json.RawMessage `json:"tags"`
	Importance  json.RawMessage `json:"importance"`
}

func oldRememberEntry(ev *events.Envelope) (entry, bool) {
	var d oldRememberData
	if json.Unmarshal(ev.Data, &d) != nil || strings.TrimSpace(d.Content) == "" {
		return entry{}, false
	}
	content := strings.TrimSpace(d.Content)
	e := entry{
		id:          EntryID(ev.Stream, ev.Seq, 0),
		scope:       ev.Stream,
		typ:         d.Type,
		title:       strings.TrimSpace(d.Title),
		description: strings.TrimSpace(d.Description),
		terms:       strings.TrimSpace(d.Terms),
		content:     content,
		tags:        oldCleanTags(d.Tags),
		confidence:  1,
		status:      statusActive,
		version:     1,
	}
	if !oldEntryTypes[e.typ] {
		e.typ = "fact"
	}
	if e.title == "" {
		e.title = titleFrom(content)
	}
	e.importance = oldDecodeImportance(d.Importance, 1)
	return e, true
}

type oldOpsData struct {
	Checkpoint string            `json:"checkpoint"`
	Ops        []json.RawMessage `json:"ops"`
}

type oldOpItem struct {
	Op               string          `json:"op"`
	TargetID         string          `json:"targetId"`
	EvidenceEventIDs []string        `json:"evidenceEventIds"`
	Type             string          `json:"type"`
	Title            string          `json:"title"`
	Description      *string         `json:"description"`
	Content          string          `json:"content"`
	Tags             json.RawMessage `json:"tags"`
	Terms            json.RawMessage `json:"terms"`
	Importance       json.RawMessage `json:"importance"`
	Confidence       json.RawMessage `json:"confidence"`
	Reason           string          `json:"reason"`
	Provenance       string          `json:"provenance"`
}

func oldNewEntry(ev *events.Envelope, pos int, o *oldOpItem, typ string) (*entry, bool) {
	title := strings.TrimSpace(o.Title)
	content := o.Content
	if strings.TrimSpace(content) == "" {
		if title == "" {
			return nil, false
		}
		content = title
	}
	if title == "" {
		title = titleFrom(content)
	}
	e := &entry{
		id:         EntryID(ev.Stream, ev.Seq, pos),
		scope:      ev.Stream,
		typ:        strings.ToLower(strings.TrimSpace(o.Type)),
		title:      title,
		content:    content,
		tags:       oldCleanTags(o.Tags),
		terms:      oldDecodeTerms(o.Terms),
		importance: oldDecodeImportance(o.Importance, 1),
		confidence: oldDecodeConfidence(o.Confidence, 1),
		status:     statusActive,
		version:    1,
	}
	if o.Description != nil {
		e.description = strings.TrimSpace(*o.Description)
	}
	if !oldEntryTypes[e.typ] {
		e.typ = typ
		if !oldEntryTypes[e.typ] {
			e.typ = "fact"
		}
	}
	return e, true
}

func oldRevise(e *entry, o *oldOpItem) (textChanged bool) {
	before := [5]string{e.title, e.description, e.terms, e.content, strings.Join(e.tags, "\x00")}
	if t := strings.ToLower(strings.TrimSpace(o.Type)); oldEntryTypes[t] {
		e.typ = t
	}
	if t := strings.TrimSpace(o.Title); t != "" {
		e.title = t
	}
	if o.Description != nil {
		e.description = strings.TrimSpace(*o.Description)
	}
	if strings.TrimSpace(o.Content) != "" {
		e.content = o.Content
	}
	if len(o.Terms) > 0 && string(o.Terms) != "null" {
		e.terms = oldDecodeTerms(o.Terms)
	}
	if len(o.Tags) > 0 && string(o.Tags) != "null" {
		e.tags = oldCleanTags(o.Tags)
	}
	e.importance = oldDecodeImportance(o.Importance, e.importance)
	e.confidence = oldDecodeConfidence(o.Confidence, e.confidence)
	after := [5]string{e.title, e.description, e.terms, e.content, strings.Join(e.tags, "\x00")}
	return before != after
}

func oldCleanTags(raw json.RawMessage) []string {
	var tags []string
	_ = json.Unmarshal(raw, &tags)
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

func oldDecodeTerms(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return strings.Join(oldCleanTags(raw), ", ")
}

func oldDecodeImportance(raw json.RawMessage, def int) int {
	var v float64
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return def
	}
	return int(min(max(v, 0), 3))
}

func oldDecodeConfidence(raw json.RawMessage, def float64) float64 {
	var v float64
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return def
	}
	return min(max(v, 0), 1)
}
