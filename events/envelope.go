package events

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// CurrentVersion is the envelope version this build writes.
// Part of the on-disk format; bump it only together with an upcaster.
const CurrentVersion = 1

// Envelope is one event: one JSON object per line in a segment.
//
// Seq is assigned by the log when the event is appended; Id is the
// idempotency key chosen by the producer; Time is the event's own time
// (RFC 3339), not the time it was ingested. Data holds the type-specific
// payload as raw JSON, as stored; events/payload defines it per type and
// is the one place it is decoded.
type Envelope struct {
	V       int             `json:"v"`
	Stream  string          `json:"stream"`
	Seq     uint64          `json:"seq"`
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    string          `json:"time"`
	Session string          `json:"session,omitempty"`
	Cwd     string          `json:"cwd,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Event types of vocabulary v1 (ARCHITECTURE §3).
const (
	TypeSessionStart      = "session/start"
	TypeSessionEnd        = "session/end"
	TypeUserMessage       = "user/message"
	TypeAssistantMessage  = "assistant/message"
	TypeToolCall          = "tool/call"
	TypeToolResult        = "tool/result"
	TypeCompactionSummary = "compaction/summary"
	TypeTurnEnd           = "turn/end"
	TypeTaskEnd           = "task/end"

	TypeMemoryRemember = "memory/remember"
	TypeMemoryForget   = "memory/forget"
	TypeMemoryOps      = "memory/ops"
	TypeMemoryShown    = "memory/shown"
	TypeFileEdit       = "file/edit"

	TypeScopeRegister     = "scope/register"
	TypeScopeArchive      = "scope/archive"
	TypeScopeRestore      = "scope/restore"
	TypeScopePurge        = "scope/purge"
	TypeMaintenanceRotate = "maintenance/rotate"
	TypeMaintenanceBackup = "maintenance/backup"
)

// Types lists every known event type of vocabulary v1, in a fixed order.
var Types = []string{
	TypeSessionStart, TypeSessionEnd, TypeUserMessage, TypeAssistantMessage,
	TypeToolCall, TypeToolResult, TypeCompactionSummary, TypeTurnEnd, TypeTaskEnd,
	TypeMemoryRemember, TypeMemoryForget, TypeMemoryOps, TypeMemoryShown, TypeFileEdit,
	TypeScopeRegister, TypeScopeArchive, TypeScopeRestore, TypeScopePurge,
	TypeMaintenanceRotate, TypeMaintenanceBackup,
}

var knownTypes = func() map[string]bool {
	m := make(map[string]bool, len(Types))
	for _, t := range Types {
		m[t] = true
	}
	return m
}()

// KnownType reports whether t belongs to the vocabulary.
func KnownType(t string) bool { return knownTypes[t] }

// Upcaster rewrites an envelope written with an older version v into the
// current version. It receives the raw line and returns the upgraded
// envelope.
type Upcaster func(raw []byte) (Envelope, error)

// upcasters is keyed on the envelope's "v". Version 1 is current and
// needs none; a future version 2 adds upcasters[1].
var upcasters = map[int]Upcaster{}

// Marshal encodes e as one JSON line without the trailing newline.
func Marshal(e *Envelope) ([]byte, error) {
	if e.V == 0 {
		e.V = CurrentVersion
	}
	return marshalJSON(e)
}

// marshalJSON is json.Marshal without HTML escaping: text such as
// "a < b" is written as it is, not as "a \u003c b", so a line read back
// carries the very bytes the producer sent (live folds and replay see
// the same data). Part of the on-disk format; do not change.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Unmarshal decodes one JSON line into an envelope of the current
// version, upcasting older versions.
func Unmarshal(line []byte) (Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(line, &e); err != nil {
		return Envelope{}, fmt.Errorf("decode envelope: %w", err)
	}
	switch {
	case e.V == CurrentVersion:
		return e, nil
	case e.V > CurrentVersion:
		return Envelope{}, fmt.Errorf("decode envelope: version %d is newer than this build understands (%d); upgrade dshmem", e.V, CurrentVersion)
	}
	up, ok := upcasters[e.V]
	if !ok {
		return Envelope{}, fmt.Errorf("decode envelope: no upcaster for version %d", e.V)
	}
	return up(line)
}
