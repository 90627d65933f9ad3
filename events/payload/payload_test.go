package payload_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecodeEveryType decodes every event type of the vocabulary from
// testdata: testdata/payload/v1.jsonl holds each type in today's shape,
// older.jsonl the older shapes, and the golden segments what this build's
// first log holds.
func TestDecodeEveryType(t *testing.T) {
	t.Run("Vocabulary", func(t *testing.T) {
		for _, typ := range events.Types {
			p, ok := payload.New(typ)
			assert.False(t, !ok || p.EventType() != typ, "New(%q): got %T %v, want a payload of that type", typ, p, ok)
		}
		_, ok := payload.New("memory/recall")
		assert.False(t, ok, "New(memory/recall): got a payload, want none")
		_, err := payload.Decode("memory/recall", json.RawMessage(`{}`))
		assert.ErrorIs(t, err, payload.ErrUnknownType, "Decode(memory/recall): got %v, want ErrUnknownType", err)
	})
	t.Run("V1", func(t *testing.T) {
		seen := map[string]bool{}
		for _, l := range readLines(t, "payload/v1.jsonl") {
			p, err := payload.Decode(l.Type, l.Data)
			if !assert.NoError(t, err, "%s (%s)", l.ID, l.Type) {
				continue
			}
			assert.Equal(t, l.Type, p.EventType(), "%s: got a %T (%s), want %s", l.ID, p, p.EventType(), l.Type)
			seen[l.Type] = true
			got, err := payload.Marshal(p)
			require.NoError(t, err, "%s: Marshal", l.ID)
			want := l.Data
			if len(want) == 0 {
				want = json.RawMessage(`{}`)
			}
			assert.Equal(t, want, got, "%s: Marshal(Decode(data)): got %s, want %s", l.ID, got, want)
		}
		for _, typ := range events.Types {
			assert.True(t, seen[typ], "testdata/payload/v1.jsonl has no %s event", typ)
		}
	})
	t.Run("Older", func(t *testing.T) {
		for _, l := range readLines(t, "payload/older.jsonl") {
			_, err := payload.Decode(l.Type, l.Data)
			assert.NoError(t, err, "%s (%s)", l.ID, l.Type)
		}
	})
	t.Run("GoldenSegments", func(t *testing.T) {
		evs := goldenEvents(t)
		require.NotEqualValues(t, 0, len(evs), "no events in the golden segments")
		for _, e := range evs {
			p, err := payload.Decode(e.Type, e.Data)
			if !assert.NoError(t, err, "%s seq %d (%s)", e.Stream, e.Seq, e.Type) {
				continue
			}
			switch d := p.(type) {
			case payload.UserMessage:
				assert.NotEqualValues(t, "", d.Text, "%s seq %d: user/message without text", e.Stream, e.Seq)
			case payload.Remember:
				assert.False(t, d.Content == "" || d.Importance == nil, "%s seq %d: got %+v, want content and importance", e.Stream, e.Seq, d)
			}
		}
	})
}

// TestUpcastOlderShapes reads testdata/payload/older.jsonl, shapes a log
// holds that are not today's, and pins what each becomes.
func TestUpcastOlderShapes(t *testing.T) {
	ptr := func(n int) *int { return &n }
	want := map[string]payload.Payload{
		// A malformed metadata field of a start is best effort.
		"payload:older:1": payload.SessionStart{Origin: payload.OriginSubagent, Parent: "s-v1"},
		// A host that sends only the text.
		"payload:older:2": payload.UserMessage{Text: "A host that sends only text."},
		// No ok (nil: not a failure); an error object and a turn string
		// are best effort.
		"payload:older:3": payload.ToolResult{Name: "grep", Text: "no ok field"},
		// The importance as import legacy wrote it: a float.
		"payload:older:4": payload.Remember{Content: "Importance written as a float by import legacy.", Importance: ptr(2)},
		// Tags as one string are present but no tags; 0.8 is 0.
		"payload:older:5": payload.Remember{Content: "Tags as one string are no tags.", Tags: []string{}, Importance: ptr(0)},
		// A mixed array keeps its strings; null importance is 0.
		"payload:older:6": payload.Remember{Content: "A null importance reads as 0.", Tags: []string{"a", "", "b", " a "}, Importance: ptr(0)},
		// An importance that is not a number is absent: the default.
		"payload:older:7": payload.Remember{Content: "Importance as a string is absent."},
		// Above the range: 3.
		"payload:older:8": payload.Remember{Content: "Importance above the range is 3.", Importance: ptr(3)},
		"payload:older:9": payload.Remember{Content: "Imported from dsh-workspace-memory.", Title: "Legacy entry", Type: payload.TypeFact,
			Tags: []string{"legacy"}, Importance: ptr(1),
			Legacy: &payload.LegacyMeta{Source: "scopes/ws-1/memory_entries.json", ID: "e-1", Type: "note", Status: "active", CreatedAt: "2025-01-01T00:00:00Z"}},
		"payload:older:10": payload.Ops{Checkpoint: "ck-fedcba9876543210", Session: "s-older", From: 1, To: 3, Distiller: "openai", Model: "deepseek-chat",
			Ops: []payload.Op{
				// Terms as one string; 1.9 is 1; confidence 1.5 is 1.
				{Op: "ADD", Title: "Terms as one string", Content: "Terms given as one string.", Terms: []string{" make, check "},
					Importance: ptr(1), Confidence: new(1.0)},
				// 42 does not decode: the zero op keeps its place.
				{},
				// A confidence word is absent; null importance is 0.
				{Op: payload.OpAdd, Content: "Confidence as a word is absent.", Importance: ptr(0)},
				// "" clears the description; a tags string clears the tags.
				{Op: payload.OpRevise, TargetID: "m-0000000000000000", Description: new(""), Tags: []string{}},
			}},
		"payload:older:11": payload.CompactionSummary{CompactionID: "legacy:sessions/2026-08-19.md:0", Text: "A day section of a legacy tree.",
			LegacySource: "sessions/2026-08-19.md"},
		// No session: the envelope's.
		"payload:older:12": payload.Shown{Entries: []string{"m-0000000000000000", "m-0000000000000000"}},
	}
	lines := readLines(t, "payload/older.jsonl")
	require.Len(t, lines, len(want), "older.jsonl has %d lines, the test pins %d", len(lines), len(want))
	for _, l := range lines {
		got, err := payload.Decode(l.Type, l.Data)
		if !assert.NoError(t, err, "%s", l.ID) {
			continue
		}
		assert.True(t, reflect.DeepEqual(got, want[l.ID]), "%s: got %s, want %s", l.ID, show(got), show(want[l.ID]))
	}
}

// show prints a payload with its pointers followed.
func show(p payload.Payload) string {
	b, _ := json.Marshal(p)
	return string(b)
}

func TestUnmarshal(t *testing.T) {
	t.Run("AbsentDataIsZero", func(t *testing.T) {
		for _, typ := range events.Types {
			for _, data := range []string{"", " ", "null"} {
				p, err := payload.Decode(typ, json.RawMessage(data))
				zero, _ := payload.New(typ)
				assert.False(t, err != nil || !reflect.DeepEqual(p, reflect.ValueOf(zero).Elem().Interface()), "%s %q: got %+v, %v, want the zero payload", typ, data, p, err)
			}
		}
	})
	t.Run("ErrNotAnObject", func(t *testing.T) {
		for _, typ := range events.Types {
			for _, data := range []string{`"text"`, `[1]`, `5`, `true`, `{"text":`} {
				_, err := payload.Decode(typ, json.RawMessage(data))
				assert.Error(t, err, "%s %s: got no error", typ, data)
			}
		}
	})
	t.Run("ErrDependedField", func(t *testing.T) {
		for _, c := range []struct{ typ, data string }{
			{events.TypeUserMessage, `{"text":5,"messageId":"m1"}`},
			{events.TypeUserMessage, `{"text":"t","injected":"yes"}`},
			{events.TypeAssistantMessage, `{"text":["t"]}`},
			{events.TypeToolResult, `{"name":"bash","text":{}}`},
			{events.TypeCompactionSummary, `{"compactionId":7,"text":"t"}`},
			{events.TypeTaskEnd, `{"request":"r","result":1}`},
			{events.TypeSessionEnd, `{"summary":true}`},
			{events.TypeMemoryRemember, `{"content":"c","title":5}`},
			{events.TypeMemoryRemember, `{"content":"c","terms":["a"]}`},
			{events.TypeMemoryForget, `{"entryId":"m","reason":1}`},
			{events.TypeMemoryOps, `{"checkpoint":"ck","ops":"add"}`},
			{events.TypeMemoryShown, `{"entries":"m-1"}`},
			{events.TypeScopeRegister, `{"dir":1}`},
			{events.TypeScopePurge, `{"key":["ws-0123456789abcdef0123"]}`},
		} {
			_, err := payload.Decode(c.typ, json.RawMessage(c.data))
			assert.Error(t, err, "%s %s: got no error", c.typ, c.data)
		}
		// What did decode is kept.
		p, _ := payload.Decode(events.TypeUserMessage, json.RawMessage(`{"text":5,"messageId":"m1","injected":true}`))
		m := p.(payload.UserMessage)
		assert.False(t, m.MessageID != "m1" || !m.Injected, "got %+v, want messageId and injected kept", m)
	})
	t.Run("OKBestEffortField", func(t *testing.T) {
		for _, c := range []struct{ typ, data string }{
			{events.TypeSessionStart, `{"origin":"top","delegationDepth":"2","agentPreset":7}`},
			{events.TypeUserMessage, `{"text":"t","messageId":5,"source":"plugin"}`},
			{events.TypeAssistantMessage, `{"text":"t","turn":"1","step":1.5}`},
			{events.TypeToolCall, `{"name":{},"args":"x","turn":[]}`},
			{events.TypeToolResult, `{"text":"t","ok":"no","error":{"message":"boom"},"callId":1}`},
			{events.TypeCompactionSummary, `{"compactionId":"c","text":"t","injected":"no","legacySource":1}`},
			{events.TypeTurnEnd, `{"reason":{"kind":"error"},"turn":"1"}`},
			{events.TypeTaskEnd, `{"request":"r","result":"s","taskId":7,"status":{}}`},
			{events.TypeSessionEnd, `{"reason":5}`},
			{events.TypeMemoryRemember, `{"content":"c","tags":"a,b","importance":"high","legacy":[]}`},
			{events.TypeMemoryOps, `{"checkpoint":"ck","from":"1","model":3,"ops":[5,{"op":"add","oldQuote":1,"terms":9}]}`},
			{events.TypeMemoryShown, `{"entries":["m"],"mode":1}`},
			{events.TypeFileEdit, `{"path":1,"content":"c"}`},
			{events.TypeScopeArchive, `{"why":"anything"}`},
		} {
			_, err := payload.Decode(c.typ, json.RawMessage(c.data))
			assert.NoError(t, err, "%s %s", c.typ, c.data)
		}
	})
	t.Run("OpKeepsItsPlace", func(t *testing.T) {
		p, err := payload.Decode(events.TypeMemoryOps, json.RawMessage(
			`{"checkpoint":"ck","ops":[{"op":"add","content":"a"},{"op":5},null,"x",{"op":"forget","targetId":"m"}]}`))
		require.NoError(t, err)
		ops := p.(payload.Ops).Ops
		names := make([]string, len(ops))
		for i, o := range ops {
			names[i] = o.Op
		}
		got, want := strings.Join(names, ","), "add,,,,forget"
		assert.Equal(t, want, got, "got ops %q, want %q", got, want)
	})
	t.Run("ErrNotAPointer", func(t *testing.T) {
		err := payload.Unmarshal([]byte(`{}`), payload.Forget{})
		assert.Error(t, err, "Unmarshal into a value: got no error")
	})
}

func TestMarshal(t *testing.T) {
	t.Run("NoHTMLEscaping", func(t *testing.T) {
		got, err := payload.Marshal(payload.UserMessage{Text: `a < b && "c" > d`})
		want := `{"text":"a < b && \"c\" > d","injected":false}`
		assert.False(t, err != nil || string(got) != want, "got %s, %v, want %s", got, err, want)
	})
	t.Run("AbsentAndEmpty", func(t *testing.T) {
		got, _ := payload.Marshal(payload.Ops{Checkpoint: "sync-1", Distiller: "hand-edit", Ops: []payload.Op{
			{Op: payload.OpRevise, TargetID: "m-1", Description: new(""), Tags: []string{}, Importance: new(0), Provenance: payload.ProvenanceHandEdit},
			{Op: payload.OpAdd, Content: "c"},
		}})
		want := `{"checkpoint":"sync-1","distiller":"hand-edit","ops":[` +
			`{"op":"revise","targetId":"m-1","description":"","tags":[],"importance":0,"provenance":"hand-edit"},` +
			`{"op":"add","content":"c"}]}`
		assert.Equal(t, want, string(got), "got %s, want %s", got, want)
	})
}

func TestEntryModel(t *testing.T) {
	assert.True(t, slices.Equal(payload.EntryTypes, []string{"preference", "decision", "architecture", "rule", "fact", "fix", "procedure"}), "EntryTypes: got %v", payload.EntryTypes)
	assert.True(t, slices.Equal(payload.Statuses, []string{"active", "conflict", "superseded", "forgotten"}), "Statuses: got %v", payload.Statuses)
	assert.True(t, slices.Equal(payload.OpKinds, []string{"add", "revise", "supersede", "conflict", "forget"}), "OpKinds: got %v", payload.OpKinds)
	assert.False(t, !payload.KnownEntryType(payload.DefaultEntryType) || payload.KnownEntryType("Fact") || payload.KnownEntryType("facts"), "KnownEntryType: want exact matches only")
	assert.False(t, !payload.KnownStatus("forgotten") || payload.KnownStatus("deleted") || !payload.KnownOp("supersede") || payload.KnownOp("resolve"), "KnownStatus/KnownOp: wrong answers")
	for _, c := range []struct {
		in   float64
		want int
	}{{-1, 0}, {0, 0}, {0.8, 0}, {1, 1}, {2.5, 2}, {2.999, 2}, {3, 3}, {7, 3}, {1e300, 3}} {
		got := payload.ClampImportance(c.in)
		assert.Equal(t, c.want, got, "ClampImportance(%v): got %d, want %d", c.in, got, c.want)
	}
	assert.False(t, payload.ClampConfidence(-0.5) != 0 || payload.ClampConfidence(0.25) != 0.25 || payload.ClampConfidence(9) != 1, "ClampConfidence: wrong answers")
}
