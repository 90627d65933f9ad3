package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer/metrics"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envelope is an event of session s1 with p as a producer writes it.
func envelope(t *testing.T, p payload.Payload) events.Envelope {
	t.Helper()
	raw, err := payload.Marshal(p)
	require.NoError(t, err)
	return events.Envelope{ID: "e", Type: p.EventType(), Time: "2026-08-18T10:00:00Z", Session: "s1", Data: raw}
}

func TestToSegment(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name string
		ev   events.Envelope
		want segment
	}{
		{"UserTyped", envelope(t, payload.UserMessage{Text: "No, that's wrong", MessageID: "m1"}),
			segment{typ: events.TypeUserMessage, msgID: "m1", text: "No, that's wrong", correction: true}},
		{"UserInjected", envelope(t, payload.UserMessage{Text: "memory shown back", Injected: true}),
			segment{typ: segInjected}},
		{"AssistantStep", envelope(t, payload.AssistantMessage{Text: "ok", Turn: 1, Step: 4}),
			segment{typ: events.TypeAssistantMessage, step: 4}},
		{"ToolCall", envelope(t, payload.ToolCall{Name: "bash", Args: json.RawMessage(`{"cmd":"ls"}`), Step: 2}),
			segment{typ: events.TypeToolCall, tool: "bash", args: `{"cmd":"ls"}`, step: 2}},
		{"ToolFailedWithErrorOnly", envelope(t, payload.ToolResult{Name: "bash", OK: &no, Error: "exit 1", Step: 2}),
			segment{typ: events.TypeToolResult, tool: "bash", text: "exit 1", step: 2, failed: true}},
		{"ToolInjected", envelope(t, payload.ToolResult{Name: "memory_search", Text: "…", Injected: true, Step: 3}),
			segment{typ: segInjected, step: 3}},
		// A host's field of another shape is dropped, the rest is read.
		{"MalformedFieldsKeepTheRest", events.Envelope{Type: events.TypeToolResult,
			Data: json.RawMessage(`{"name":"bash","text":"boom","error":7,"step":5}`)},
			segment{typ: events.TypeToolResult, tool: "bash", text: "boom", step: 5}},
		// Only messages, tool calls and results have steps (vocabulary v1).
		{"NoStepOutsideTheVocabulary", events.Envelope{Type: events.TypeTurnEnd, Data: json.RawMessage(`{"reason":"done","step":9}`)},
			segment{typ: events.TypeTurnEnd}},
		{"NoData", events.Envelope{Type: events.TypeToolCall}, segment{typ: events.TypeToolCall}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, toSegment(&tc.ev))
		})
	}
}

func TestObserveOriginAndStep(t *testing.T) {
	b := New(nil, PacketOptions{}, nil, time.Now, nil)
	b.Observe([]events.Envelope{
		envelope(t, payload.SessionStart{Origin: payload.OriginTop, DelegationDepth: 1}),
		envelope(t, payload.AssistantMessage{Text: "a"}),
		envelope(t, payload.AssistantMessage{Text: "b"}),
	})
	rt := b.sessions["s1"]
	require.NotNil(t, rt, "session s1 not observed")
	assert.Equal(t, payload.OriginSubagent, rt.origin, "a delegation depth of 1 is a sub-agent")
	assert.Equal(t, 2, rt.step, "a host that numbers no steps: one per answer")
	b.Observe([]events.Envelope{envelope(t, payload.ToolCall{Name: "bash", Step: 7})})
	assert.Equal(t, 7, rt.step, "the host's step")
	b.Observe([]events.Envelope{envelope(t, payload.ToolResult{Name: "bash", Text: "x", Step: 5})})
	assert.Equal(t, 7, rt.step, "an older step does not go back")
}

// TestSessionCap: beyond MaxSessions the runtime seen least recently is
// freed, whichever way a session arrived (an event or a claimed prompt),
// and a session seen again moves to the back of the line.
func TestSessionCap(t *testing.T) {
	clock := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	m := metrics.New()
	b := New(noRecall{}, PacketOptions{MaxSessions: 3}, m, func() time.Time { return clock }, nil)
	observe := func(session string) {
		clock = clock.Add(time.Second)
		ev := envelope(t, payload.UserMessage{Text: "hello " + session})
		ev.Session = session
		b.Observe([]events.Envelope{ev})
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		observe(s)
	}
	observe("s1") // s1 is now the newest; s2 the oldest
	observe("s4")
	assert.Equal(t, 3, b.Sessions())
	assert.Nil(t, b.sessions["s2"], "the least recently seen session was not freed")
	for _, s := range []string{"s1", "s3", "s4"} {
		assert.NotNil(t, b.sessions[s], "%s was freed", s)
	}
	clock = clock.Add(time.Second)
	b.Claim(context.Background(), "s5", "global", "", "", "", "a prompt", 1)
	assert.Equal(t, 3, b.Sessions())
	assert.Nil(t, b.sessions["s3"], "a claimed prompt's new session did not free the oldest")
	assert.EqualValues(t, 2, m.SessionsEvicted.Load())
	// A flood stays at the cap.
	for i := range 5000 {
		observe(fmt.Sprintf("flood-%d", i))
	}
	assert.Equal(t, 3, b.Sessions())
	assert.Equal(t, 1024, PacketOptions{}.withDefaults().MaxSessions, "the default cap README quotes")
}

// noRecall finds nothing.
type noRecall struct{}

func (noRecall) Recall(context.Context, recall.Query) (*recall.Result, error) {
	return &recall.Result{}, nil
}
