package dsh

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
)

// Header is the first line of a host session log.
type Header struct {
	Type            string `json:"type"` // always "session"
	Version         int    `json:"version"`
	ID              string `json:"id"`
	CreatedAt       millis `json:"createdAt"`
	Cwd             string `json:"cwd"`
	ParentSession   string `json:"parentSession,omitempty"`
	Origin          string `json:"origin,omitempty"`
	DelegationDepth int    `json:"delegationDepth"`
	AgentPreset     string `json:"agentPreset,omitempty"`
}

// millis is a host timestamp: milliseconds since the Unix epoch. The host
// writes integers; a float is accepted and truncated.
type millis int64

func (m *millis) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*m = millis(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > 1<<53 {
		return fmt.Errorf("bad millisecond time %s", b)
	}
	*m = millis(f)
	return nil
}

// rfc3339 renders a host time the way envelopes carry it:
// "2026-08-18T10:00:00.123Z".
func (m millis) rfc3339() string {
	return time.UnixMilli(int64(m)).UTC().Format("2006-01-02T15:04:05.000Z")
}

// skipTypes are host event types that carry nothing dshmem remembers.
// They are counted in Stats.Skipped, never reported as unknown.
var skipTypes = map[string]bool{
	"turn/start": true, "step/start": true, "step/end": true,
	"assistant/chunk": true, "text-chunks": true, "reasoning-chunks": true, "tool-call-chunks": true,
	"request/header": true, "request/context": true,
	"session/title": true, "session/title-llm-request": true,
	"compaction/start": true, "compaction/end": true,
	"agent/inbox/spliced": true, // only when it inserts no user message
	"permission/preset":   true, "sandbox/mode": true,
	"approval/policy": true, "approval/asked": true, "approval/decided": true,
	"command/run": true, "command/done": true, "goal/change": true,
	"tool/code-dispatch-start": true, "tool/code-dispatch": true,
	"tool-workflow/run-start": true, "tool-workflow/agent-start": true,
	"tool-workflow/agent-end": true, "tool-workflow/run-end": true,
	"subagent/descriptor": true, "session/end-seed": true,
}

// Keys of Stats.Skipped for mapped types that produced no envelope.
const (
	skipNoText      = "assistant/message (no text)"
	skipDupSpliced  = "user/message (already spliced)"
	skipDupInserted = "agent/inbox/spliced (message seen)"
)

// runtimeContextPrefix starts the snapshot the host adds to every turn.
// Its source is a plugin already; the prefix is a second guard.
const runtimeContextPrefix = "Current runtime context"

// MemoryTools are the tools dshmem's host plugin registers. What they
// return is memory read back from dshmem (or its receipt of a write):
// their tool/result events are mapped with injected=true, so that they
// are never distilled into entries nor found by search as if they were
// something that happened in the session.
var MemoryTools = map[string]bool{"memory_search": true, "memory_remember": true, "memory_forget": true}

// row is one host line after the header.
type row struct {
	Type      string          `json:"type"`
	Seq       *int64          `json:"seq"`
	Time      *millis         `json:"time"`
	Seq0      *int64          `json:"seq0"` // packed chunk rows
	Ignorable bool            `json:"ignorable"`
	Data      json.RawMessage `json:"data"`
}

type block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ToolCallID string          `json:"toolCallId"`
	Content    json.RawMessage `json:"content"` // tool-result: blocks or a string
	IsError    bool            `json:"isError"`
}

// hostMessage is a message as the host logs it. Its source has the
// shape of ours (payload.Source), which the mapper copies.
type hostMessage struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Content []block `json:"content"`
	Source  *struct {
		payload.Source
		CallID string `json:"callId"`
	} `json:"source"`
}

// mapper turns host lines into envelopes. It carries the state one session
// needs across lines: the header, tool names by call id, and the message
// ids already mapped.
type mapper struct {
	header    *Header
	calls     map[string]string
	seenMsgs  map[string]bool
	stats     Stats
	discarded bool // replaying: build state, emit nothing
}

func newMapper() *mapper {
	return &mapper{calls: map[string]string{}, seenMsgs: map[string]bool{}, stats: newStats()}
}

// line maps one host line. A line that is not JSON is an error (the caller
// has already verified the bytes, so this is damage or a foreign file); a
// line of an unexpected shape is counted in Stats.Malformed.
func (m *mapper) line(raw []byte) ([]events.Envelope, error) {
	m.stats.Lines++
	if m.header == nil {
		return m.headerLine(raw)
	}
	var r row
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode host line: %w", err)
	}
	if r.Seq0 != nil {
		m.stats.Skipped[r.Type]++
		return nil, nil
	}
	switch r.Type {
	case "user/message", "assistant/message", "tool/call", "tool/result",
		"compaction/summary", "turn/end", "agent/inbox/spliced":
	default:
		switch {
		case skipTypes[r.Type] || r.Ignorable:
			m.stats.Skipped[r.Type]++
		default:
			m.stats.Unknown[r.Type]++
		}
		return nil, nil
	}
	if r.Seq == nil || r.Time == nil {
		m.stats.Malformed[r.Type]++
		return nil, nil
	}
	evs, err := m.mapRow(&r)
	if err != nil {
		m.stats.Malformed[r.Type]++
		return nil, nil
	}
	return evs, nil
}

func (m *mapper) headerLine(raw []byte) ([]events.Envelope, error) {
	var h Header
	if err := json.Unmarshal(raw, &h); err != nil || h.Type != "session" {
		return nil, ErrNotSession
	}
	if h.ID == "" {
		return nil, fmt.Errorf("%w: header has no id", ErrNotSession)
	}
	m.header = &h
	origin := payload.OriginTop
	if h.Origin == payload.OriginSubagent || h.DelegationDepth > 0 {
		origin = payload.OriginSubagent
	}
	ev, err := m.envelope("header", h.CreatedAt, payload.SessionStart{
		Origin: origin, Parent: h.ParentSession, AgentPreset: h.AgentPreset, DelegationDepth: h.DelegationDepth,
	})
	if err != nil {
		return nil, err
	}
	return []events.Envelope{ev}, nil
}

func (m *mapper) mapRow(r *row) ([]events.Envelope, error) {
	key := strconv.FormatInt(*r.Seq, 10)
	switch r.Type {
	case "user/message":
		var msg hostMessage
		if err := json.Unmarshal(r.Data, &msg); err != nil {
			return nil, err
		}
		if msg.ID != "" && m.seenMsgs[msg.ID] {
			m.stats.Skipped[skipDupSpliced]++
			return nil, nil
		}
		ev, err := m.userMessage(key, *r.Time, &msg)
		if err != nil {
			return nil, err
		}
		return []events.Envelope{ev}, nil

	case "agent/inbox/spliced":
		var d struct {
			Inserted []hostMessage `json:"inserted"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		var out []events.Envelope
		for i := range d.Inserted {
			msg := &d.Inserted[i]
			if msg.Role != "" && msg.Role != "user" {
				continue
			}
			if msg.ID != "" && m.seenMsgs[msg.ID] {
				m.stats.Skipped[skipDupInserted]++
				continue
			}
			ev, err := m.userMessage(key+"."+strconv.Itoa(i), *r.Time, msg)
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		if len(out) == 0 {
			m.stats.Skipped[r.Type]++
		}
		return out, nil

	case "assistant/message":
		var d struct {
			Turn, Step int
			Message    hostMessage `json:"message"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		// Reasoning is not kept; tool-call blocks are left to the
		// tool/call rows the host writes for each of them.
		text := joinText(d.Message.Content)
		if text == "" {
			m.stats.Skipped[skipNoText]++
			return nil, nil
		}
		return m.one(key, *r.Time, payload.AssistantMessage{Text: text, Turn: d.Turn, Step: d.Step})

	case "tool/call":
		var d struct {
			Turn, Step int
			CallID     string `json:"callId"`
			Name       string `json:"name"`
			Arguments  json.RawMessage
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		if d.CallID != "" {
			m.calls[d.CallID] = d.Name
		}
		return m.one(key, *r.Time, payload.ToolCall{
			Name: d.Name, Args: toolArgs(d.Arguments), CallID: d.CallID, Turn: d.Turn, Step: d.Step,
		})

	case "tool/result":
		var d struct {
			Turn, Step int
			Name       string          `json:"name"`
			Message    hostMessage     `json:"message"`
			Error      json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		ok := true
		out := payload.ToolResult{Name: d.Name, Turn: d.Turn, Step: d.Step, OK: &ok}
		if d.Message.Source != nil {
			out.CallID = d.Message.Source.CallID
		}
		var texts []string
		for _, b := range d.Message.Content {
			if b.Type != "tool-result" {
				continue
			}
			if out.CallID == "" {
				out.CallID = b.ToolCallID
			}
			if b.IsError {
				ok = false
			}
			if t := resultText(b.Content); t != "" {
				texts = append(texts, t)
			}
		}
		out.Text = strings.Join(texts, "\n")
		if e := errorText(d.Error); e != "" {
			ok, out.Error = false, e
		}
		if out.Name == "" {
			out.Name = m.calls[out.CallID]
		}
		// dshmem's own tools echo memory back: never an observation.
		out.Injected = MemoryTools[out.Name]
		return m.one(key, *r.Time, out)

	case "compaction/summary":
		var d struct {
			CompactionID string  `json:"compactionId"`
			Summary      []block `json:"summary"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		return m.one(key, *r.Time, payload.CompactionSummary{CompactionID: d.CompactionID, Text: joinText(d.Summary)})

	case "turn/end":
		var d struct {
			Turn   int             `json:"turn"`
			Reason json.RawMessage `json:"reason"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return nil, err
		}
		out := payload.TurnEnd{Turn: d.Turn}
		var s string
		var obj struct {
			Kind  string          `json:"kind"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(d.Reason, &s) == nil {
			out.Reason = s
		} else if json.Unmarshal(d.Reason, &obj) == nil {
			out.Reason, out.Error = obj.Kind, errorText(obj.Error)
		}
		return m.one(key, *r.Time, out)
	}
	return nil, fmt.Errorf("unmapped type %q", r.Type)
}

// userMessage maps a host user message; a message id is mapped once.
func (m *mapper) userMessage(key string, t millis, msg *hostMessage) (events.Envelope, error) {
	// Source is always written: a message without one is injected.
	d := payload.UserMessage{Text: joinText(msg.Content), MessageID: msg.ID, Source: &payload.Source{}}
	if msg.Source != nil {
		*d.Source = msg.Source.Source
	}
	d.Injected = injected(d.Source.Kind, d.Text)
	if msg.ID != "" {
		m.seenMsgs[msg.ID] = true
	}
	return m.envelope(key, t, d)
}

// injected reports whether a user-role message was put there by the host or
// a plugin rather than written by the agent's principal: the person
// ("user") or, for a sub-agent, the delegating agent ("coordinator"). A
// message without a source is treated as injected: wrongly learning
// injected text as a user statement is the worse mistake.
func injected(kind, text string) bool {
	if strings.HasPrefix(strings.TrimSpace(text), runtimeContextPrefix) {
		return true
	}
	return kind != "user" && kind != "coordinator"
}

func (m *mapper) one(key string, t millis, data payload.Payload) ([]events.Envelope, error) {
	ev, err := m.envelope(key, t, data)
	if err != nil {
		return nil, err
	}
	return []events.Envelope{ev}, nil
}

func (m *mapper) envelope(key string, t millis, data payload.Payload) (events.Envelope, error) {
	raw, err := payload.Marshal(data)
	if err != nil {
		return events.Envelope{}, err
	}
	m.stats.Events++
	return events.Envelope{
		V:       events.CurrentVersion,
		ID:      "dsh:" + m.header.ID + ":" + key,
		Type:    data.EventType(),
		Time:    t.rfc3339(),
		Session: m.header.ID,
		Cwd:     m.header.Cwd,
		Data:    raw,
	}, nil
}

// joinText joins the text blocks of a message, one per line; reasoning,
// images and tool blocks are left out.
func joinText(bs []block) string {
	var parts []string
	for _, b := range bs {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultText reads a tool-result's content: text blocks or a plain string.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	if json.Unmarshal(raw, &bs) == nil {
		return joinText(bs)
	}
	return ""
}

// errorText reads an error that the host writes as a string or as
// {message,…}. Absent and null give "".
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "false" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	return string(raw)
}

// toolArgs keeps tool arguments as JSON: the host writes them as a JSON
// string holding JSON; a string that does not parse stays a string.
func toolArgs(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		if len(raw) == 0 {
			return json.RawMessage("null")
		}
		return raw // already an object (or other JSON value)
	}
	if t := strings.TrimSpace(s); t != "" && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	b, _ := json.Marshal(s)
	return b
}
