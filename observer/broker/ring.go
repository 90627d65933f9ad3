package broker

import (
	"strings"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer/distill"
)

// A session's runtime: the ring of its recent turns, and what a packet's
// recall reads from it (the query, the signals, corrections).

// segment is one observed event of a session, reduced to what scoring
// and the trouble signals need.
type segment struct {
	typ        string
	msgID      string // a user/message's host message id
	text       string // a user message's or a tool result's (its error when it has no text)
	tool       string // a tool call's or result's name
	args       string // a tool call's arguments, as JSON
	step       int    // the host's step of an assistant message, tool call or result; 0: none
	failed     bool
	correction bool
}

// Held returns every text the broker holds for a session: its ring's
// texts and tool arguments and a claimed prompt. It is what an audit (and
// the secrets test) checks: all of it came through redaction.
func (b *Broker) Held(session string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	rt := b.sessions[session]
	if rt == nil {
		return nil
	}
	var out []string
	for _, seg := range rt.ring {
		out = append(out, seg.text, seg.args)
	}
	return append(out, rt.claimed)
}

// sessionRuntime is the state of one live session.
type sessionRuntime struct {
	session string
	stream  string
	cwd     string
	origin  string

	ring  []segment // the last Ring segments, oldest first
	ver   uint64    // contextVersion: observed events of this session
	step  int       // the newest step seen (events or fetches)
	seen  time.Time
	dirty bool

	// claimed is a prompt the host claimed for the next turn (POST
	// /v1/sessions/{id}/prompt) before its log holds it, cut as claimText
	// cuts it, and claimedID its message id; the user/message that brings
	// the same id (or, without one, the same text) later is that prompt,
	// not a second one. msgIDs are the message ids observed lately, so a
	// prompt the log brought first is not claimed again.
	claimed   string
	claimedID string
	msgIDs    []string

	notify chan struct{} // closed at the next packet (FetchOrWait)

	compacted bool // a compaction since the last context
	packet    *Packet
	served    bool           // packet was served already
	computing bool           // a compute of this session runs
	shownAt   map[string]int // entry id → step it was last served at
}

func (rt *sessionRuntime) push(seg segment, ringSize int) {
	rt.ring = append(rt.ring, seg)
	if len(rt.ring) > ringSize {
		rt.ring = append(rt.ring[:0], rt.ring[len(rt.ring)-ringSize:]...)
	}
}

var correctionWords = []string{"no,", "no.", "wrong", "that's not", "that is not", "not what i", "actually", "instead", "incorrect", "undo", "revert",
	"不对", "错了", "不是", "不要", "别", "应该是", "改成", "撤销"}

// segInjected is the segment type of a user/message the host or a plugin
// injected.
const segInjected = "injected"

// toSegment reads ev's data through events/payload. Data that does not
// decode keeps what did (payload.Unmarshal), as a malformed field of a
// host's event must not hide the rest of it.
func toSegment(ev *events.Envelope) segment {
	seg := segment{typ: ev.Type}
	switch ev.Type {
	case events.TypeUserMessage:
		var d payload.UserMessage
		_ = payload.Unmarshal(ev.Data, &d)
		if d.Injected {
			seg.typ = segInjected
			break
		}
		seg.msgID, seg.text, seg.correction = d.MessageID, d.Text, isCorrection(d.Text)
	case events.TypeAssistantMessage:
		var d payload.AssistantMessage
		_ = payload.Unmarshal(ev.Data, &d)
		seg.step = d.Step
	case events.TypeToolCall:
		var d payload.ToolCall
		_ = payload.Unmarshal(ev.Data, &d)
		seg.tool, seg.args, seg.step = d.Name, string(d.Args), d.Step
	case events.TypeToolResult:
		var d payload.ToolResult
		_ = payload.Unmarshal(ev.Data, &d)
		seg.step = d.Step
		if d.Injected { // dshmem's own tool echoing memory: not the session's trouble
			seg.typ = segInjected
			break
		}
		seg.tool, seg.text = d.Name, d.Text
		seg.failed = (d.OK != nil && !*d.OK) || d.Error != ""
		if d.Error != "" && seg.text == "" {
			seg.text = d.Error
		}
	}
	return seg
}

// isCorrection reports whether a user's text reads as a correction of
// what the agent did.
func isCorrection(text string) bool {
	low := strings.ToLower(strings.TrimSpace(text))
	for _, w := range correctionWords {
		if strings.HasPrefix(low, w) || (utf8.RuneCountInString(w) > 2 && strings.Contains(low, w)) {
			return true
		}
	}
	return false
}

// signals counts trouble in the recent segments: failed tool results,
// repeated identical tool calls, retries (a call of a tool right after
// it failed) and user corrections.
func signals(ring []segment) []string {
	var out []string
	start := max(0, len(ring)-12)
	lastFailed := map[string]bool{}
	prevCall := ""
	for _, s := range ring[start:] {
		switch s.typ {
		case events.TypeToolResult:
			if s.failed {
				out = append(out, "tool-error:"+s.tool)
				lastFailed[s.tool] = true
			}
		case events.TypeToolCall:
			key := s.tool + "\x00" + s.args
			if key == prevCall {
				out = append(out, "repeated-call:"+s.tool)
			} else if lastFailed[s.tool] {
				out = append(out, "retry:"+s.tool)
			}
			prevCall = key
			lastFailed[s.tool] = false
		case events.TypeUserMessage:
			if s.correction {
				out = append(out, "user-correction")
			}
		}
	}
	return out
}

// query builds the recall text from the recent segments: the last thing
// the user typed and the last failure, which is what memory can help with.
func query(ring []segment) string {
	var user, failure, other string
	for i := len(ring) - 1; i >= 0 && (user == "" || failure == ""); i-- {
		s := ring[i]
		switch {
		case s.typ == events.TypeUserMessage && user == "":
			user = s.text
		case s.typ == events.TypeToolResult && s.failed && failure == "":
			failure = s.tool + " " + s.text
		case s.typ == events.TypeToolCall && other == "":
			other = s.tool
		}
	}
	q := strings.TrimSpace(distill.TruncateRunes(user, 400) + " " + distill.TruncateRunes(failure, 200))
	if q == "" {
		q = other
	}
	return q
}
