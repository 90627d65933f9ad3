package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"dshmem/events"
)

// Payload is the data of one event type: one of the types below, each
// named for the event type it belongs to by EventType.
type Payload interface {
	EventType() string
}

// ErrUnknownType is returned (wrapped) by Decode for a type outside the
// vocabulary.
var ErrUnknownType = errors.New("payload: unknown event type")

// The data of each event type of vocabulary v1, in the order of
// events.Types. Field order is the order producers write; json tags are
// the wire names. Part of the on-disk format: a field may be added, but
// never renamed, retyped or given another meaning; an older shape is read
// by the UnmarshalJSON methods in upcast.go.
type (
	// SessionStart is session/start: where a session comes from.
	SessionStart struct {
		Origin          string `json:"origin"` // OriginTop or OriginSubagent
		Parent          string `json:"parent,omitempty"`
		AgentPreset     string `json:"agentPreset,omitempty"`
		DelegationDepth int    `json:"delegationDepth"`
		// HostCwd is the host's cwd when it names no workspace (not an
		// absolute path): the envelope then has no cwd.
		HostCwd string `json:"hostCwd,omitempty"`
	}

	// SessionEnd is session/end. A summary, when given, is a block of
	// the day file (projector.BlockOf).
	SessionEnd struct {
		Reason  string `json:"reason,omitempty"`
		Summary string `json:"summary,omitempty"`
	}

	// UserMessage is user/message: a user-role message. Injected marks
	// text the host or a plugin put there: searchable, never learnt.
	UserMessage struct {
		Text      string  `json:"text"`
		Source    *Source `json:"source,omitempty"`
		Injected  bool    `json:"injected"`
		MessageID string  `json:"messageId,omitempty"`
	}

	// AssistantMessage is assistant/message: the model's answer text.
	AssistantMessage struct {
		Text     string `json:"text"`
		Injected bool   `json:"injected,omitempty"`
		Turn     int    `json:"turn"`
		Step     int    `json:"step"`
	}

	// ToolCall is tool/call. Args is the call's arguments as JSON.
	ToolCall struct {
		Name   string          `json:"name"`
		Args   json.RawMessage `json:"args"`
		CallID string          `json:"callId"`
		Turn   int             `json:"turn"`
		Step   int             `json:"step"`
	}

	// ToolResult is tool/result. OK is nil when the producer did not say
	// (not a failure). Injected marks the result of one of dshmem's own
	// tools: memory echoed back, never an observation.
	ToolResult struct {
		Name     string `json:"name"`
		OK       *bool  `json:"ok,omitempty"`
		Text     string `json:"text"`
		Error    string `json:"error,omitempty"`
		CallID   string `json:"callId"`
		Turn     int    `json:"turn"`
		Step     int    `json:"step"`
		Injected bool   `json:"injected,omitempty"`
	}

	// CompactionSummary is compaction/summary: one block of the day
	// file, keyed by CompactionID, so a repeated event changes nothing.
	CompactionSummary struct {
		CompactionID string `json:"compactionId"`
		Text         string `json:"text"`
		// LegacySource is the legacy file a summary was imported from.
		LegacySource string `json:"legacySource,omitempty"`
		Injected     bool   `json:"injected,omitempty"`
	}

	// TurnEnd is turn/end.
	TurnEnd struct {
		Reason string `json:"reason"`
		Error  string `json:"error,omitempty"`
		Turn   int    `json:"turn"`
	}

	// TaskEnd is task/end; its request and result are searchable text.
	TaskEnd struct {
		TaskID  string `json:"taskId,omitempty"`
		Request string `json:"request"`
		Result  string `json:"result"`
		Status  string `json:"status,omitempty"`
	}

	// Remember is memory/remember: one new active entry, the entry
	// projector.EntryID(stream, seq, 0).
	Remember struct {
		Content     string   `json:"content"`
		Title       string   `json:"title,omitempty"`
		Type        string   `json:"type,omitempty"` // one of EntryTypes; DefaultEntryType otherwise
		Description string   `json:"description,omitempty"`
		Terms       string   `json:"terms,omitempty"` // one string, as the entry keeps it
		Tags        []string `json:"tags,omitempty"`
		// Importance is 0–3; nil means DefaultImportance.
		Importance *int `json:"importance,omitempty"`
		// Legacy is what `import legacy` kept of an entry that our model
		// has no column for.
		Legacy *LegacyMeta `json:"legacy,omitempty"`
	}

	// Forget is memory/forget: the entry hides at once.
	Forget struct {
		EntryID string `json:"entryId"`
		Reason  string `json:"reason,omitempty"`
	}

	// Ops is memory/ops: the answer of a checkpoint's distiller, or the
	// ops a hand edit was read back into (projector/ops.go folds them).
	// A checkpoint claims From..To of Session; a hand edit has no range.
	// Ops must not be nil when marshalled: intake refuses a memory/ops
	// event without an ops array.
	Ops struct {
		Checkpoint string `json:"checkpoint"` // "ck-" + 16 hex digits, random, or "sync-…"
		Session    string `json:"session,omitempty"`
		From       uint64 `json:"from,omitempty"`
		To         uint64 `json:"to,omitempty"`
		Distiller  string `json:"distiller,omitempty"`
		Model      string `json:"model,omitempty"`
		Ops        []Op   `json:"ops"`
	}

	// Shown is memory/shown: entries handed to a session, for recall's
	// already-shown penalty. Session "" means the envelope's session.
	Shown struct {
		Entries []string `json:"entries"`
		Session string   `json:"session,omitempty"`
		Mode    string   `json:"mode,omitempty"`
	}

	// FileEdit is file/edit: a projection file as a person left it.
	FileEdit struct {
		Path    string `json:"path"` // relative to the root
		Content string `json:"content"`
	}

	// ScopeRegister is scope/register: the directory of a workspace
	// scope, written first into the stream intake creates for it.
	ScopeRegister struct {
		Dir string `json:"dir"`
	}

	// ScopeArchive and ScopeRestore carry no data in vocabulary v1;
	// what a producer sends stays in the envelope's data.
	ScopeArchive struct{}
	ScopeRestore struct{}

	// MaintenanceRotate moves the day files of days before Before
	// (YYYY-MM-DD) from sessions/ into sessions/archive/: the fold
	// moves them, so replay agrees. An event without a valid Before
	// (older producers sent none) moves nothing.
	MaintenanceRotate struct {
		Before string `json:"before,omitempty"`
	}

	// MaintenanceBackup records a backup (`dshmem backup`): where it
	// went and what was copied. The event's time is when it was made,
	// which "backup due" counts from; nothing is folded from the rest.
	MaintenanceBackup struct {
		To          string            `json:"to,omitempty"`          // the backup directory
		Generation  uint64            `json:"generation,omitempty"`  // the manifest's generation
		Copied      []string          `json:"copied,omitempty"`      // paths copied (or extended) this time
		CopiedBytes int64             `json:"copiedBytes,omitempty"` // bytes written this time
		Files       int               `json:"files,omitempty"`       // files the backup holds
		Bytes       int64             `json:"bytes,omitempty"`       // their bytes
		Snapshot    bool              `json:"snapshot,omitempty"`    // a new index snapshot was taken
		Streams     map[string]uint64 `json:"streams,omitempty"`     // stream → last seq the backup holds
	}

	// ScopePurge is scope/purge, written into the global stream when a
	// workspace scope was purged: only the key of the scope that is gone
	// (and the envelope's time). It is a record for people; no fold
	// reads it, so replaying a log without the purged stream agrees.
	ScopePurge struct {
		Key string `json:"key"`
	}
)

// Source says who put a user-role message there (UserMessage.Source):
// kind "user" or "coordinator" is the agent's principal; anything else
// (a plugin, the host) is injected.
type Source struct {
	Kind   string `json:"kind"`
	Form   string `json:"form,omitempty"`
	Plugin string `json:"plugin,omitempty"`
}

// Op is one memory operation of a memory/ops event.
//
// Absent and empty differ where a revise keeps what it is not given: a
// nil Description, Tags, Terms, Importance or Confidence leaves the
// target's value, while a non-nil empty one ("description":"",
// "tags":[]) clears it. A new entry takes "" for a nil description, no
// tags or terms, DefaultImportance and DefaultConfidence.
type Op struct {
	Op               string   `json:"op"` // one of OpKinds
	TargetID         string   `json:"targetId,omitempty"`
	OldQuote         string   `json:"oldQuote,omitempty"` // supersede: verbatim words of the target
	NewQuote         string   `json:"newQuote,omitempty"` // supersede: verbatim words of the user
	EvidenceEventIDs []string `json:"evidenceEventIds,omitempty"`
	Type             string   `json:"type,omitempty"`
	Title            string   `json:"title,omitempty"`
	Description      *string  `json:"description,omitempty"`
	Content          string   `json:"content,omitempty"`
	Tags             []string `json:"tags,omitzero"`
	Terms            []string `json:"terms,omitzero"`
	Importance       *int     `json:"importance,omitempty"` // 0–3
	Confidence       *float64 `json:"confidence,omitempty"` // 0–1
	Reason           string   `json:"reason,omitempty"`
	Provenance       string   `json:"provenance,omitempty"` // ProvenanceDistiller, ProvenanceHandEdit, ProvenanceRemember, ProvenanceEvidence

	// Evidence ops (EvidenceOpKinds) only.
	Delta     *float64   `json:"delta,omitempty"`     // confidence: the change
	Alias     string     `json:"alias,omitempty"`     // alias: the user's short form
	Expansion string     `json:"expansion,omitempty"` // alias: what it stands for
	Procedure *Procedure `json:"procedure,omitempty"` // procedure: its state after the op
}

// Procedure is the state of a learned procedure (op "procedure"): a
// tool sequence that ended in success in independent sessions of one
// workspace. Each op carries the whole state, so a fold only stores it.
type Procedure struct {
	ID            string   `json:"id"`    // "p-" + 16 hex digits of sha256(stream, steps)
	Stage         string   `json:"stage"` // StageCandidate … StageDeprecated
	Trigger       string   `json:"trigger"`
	Preconditions []string `json:"preconditions,omitempty"`
	Steps         []string `json:"steps"`
	Check         string   `json:"check"`              // what shows it worked: the last step's result
	Sessions      []string `json:"sessions,omitempty"` // independent sessions where it succeeded
	Failures      int      `json:"failures,omitempty"` // runs whose check failed
	Confirmed     bool     `json:"confirmed,omitempty"`
}

// LegacyMeta keeps what a legacy store knew about an entry that our model
// has no column for, so the log still holds all of it.
type LegacyMeta struct {
	Source          string          `json:"source"` // the file, relative to the legacy tree's root
	ID              string          `json:"id,omitempty"`
	Heading         string          `json:"heading,omitempty"`
	Type            string          `json:"type,omitempty"` // the legacy type, when it is not one of ours
	Status          string          `json:"status,omitempty"`
	ConflictGroupID string          `json:"conflictGroupId,omitempty"`
	Supersedes      []string        `json:"supersedes,omitempty"`
	SupersededBy    []string        `json:"supersededBy,omitempty"`
	Provenance      json.RawMessage `json:"provenance,omitempty"`
	Revisions       json.RawMessage `json:"revisions,omitempty"`
	CreatedAt       string          `json:"createdAt,omitempty"`
	UpdatedAt       string          `json:"updatedAt,omitempty"`
}

func (SessionStart) EventType() string      { return events.TypeSessionStart }
func (SessionEnd) EventType() string        { return events.TypeSessionEnd }
func (UserMessage) EventType() string       { return events.TypeUserMessage }
func (AssistantMessage) EventType() string  { return events.TypeAssistantMessage }
func (ToolCall) EventType() string          { return events.TypeToolCall }
func (ToolResult) EventType() string        { return events.TypeToolResult }
func (CompactionSummary) EventType() string { return events.TypeCompactionSummary }
func (TurnEnd) EventType() string           { return events.TypeTurnEnd }
func (TaskEnd) EventType() string           { return events.TypeTaskEnd }
func (Remember) EventType() string          { return events.TypeMemoryRemember }
func (Forget) EventType() string            { return events.TypeMemoryForget }
func (Ops) EventType() string               { return events.TypeMemoryOps }
func (Shown) EventType() string             { return events.TypeMemoryShown }
func (FileEdit) EventType() string          { return events.TypeFileEdit }
func (ScopeRegister) EventType() string     { return events.TypeScopeRegister }
func (ScopeArchive) EventType() string      { return events.TypeScopeArchive }
func (ScopeRestore) EventType() string      { return events.TypeScopeRestore }
func (ScopePurge) EventType() string        { return events.TypeScopePurge }
func (MaintenanceRotate) EventType() string { return events.TypeMaintenanceRotate }
func (MaintenanceBackup) EventType() string { return events.TypeMaintenanceBackup }

// New returns a pointer to a zero payload of event type typ, or false for
// a type outside the vocabulary.
func New(typ string) (Payload, bool) {
	switch typ {
	case events.TypeSessionStart:
		return new(SessionStart), true
	case events.TypeSessionEnd:
		return new(SessionEnd), true
	case events.TypeUserMessage:
		return new(UserMessage), true
	case events.TypeAssistantMessage:
		return new(AssistantMessage), true
	case events.TypeToolCall:
		return new(ToolCall), true
	case events.TypeToolResult:
		return new(ToolResult), true
	case events.TypeCompactionSummary:
		return new(CompactionSummary), true
	case events.TypeTurnEnd:
		return new(TurnEnd), true
	case events.TypeTaskEnd:
		return new(TaskEnd), true
	case events.TypeMemoryRemember:
		return new(Remember), true
	case events.TypeMemoryForget:
		return new(Forget), true
	case events.TypeMemoryOps:
		return new(Ops), true
	case events.TypeMemoryShown:
		return new(Shown), true
	case events.TypeFileEdit:
		return new(FileEdit), true
	case events.TypeScopeRegister:
		return new(ScopeRegister), true
	case events.TypeScopeArchive:
		return new(ScopeArchive), true
	case events.TypeScopeRestore:
		return new(ScopeRestore), true
	case events.TypeScopePurge:
		return new(ScopePurge), true
	case events.TypeMaintenanceRotate:
		return new(MaintenanceRotate), true
	case events.TypeMaintenanceBackup:
		return new(MaintenanceBackup), true
	}
	return nil, false
}

// Decode decodes the data of an event of type typ into today's shape:
// the payload New(typ) points to (a Remember for memory/remember, and so
// on), returned by value. Absent data (nil, empty or null) is the zero
// payload. The rules, and the older shapes read, are those of Unmarshal.
func Decode(typ string, data json.RawMessage) (Payload, error) {
	p, ok := New(typ)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownType, typ)
	}
	err := Unmarshal(data, p)
	return deref(p), err
}

// deref returns the value p points to.
func deref(p Payload) Payload { return reflect.ValueOf(p).Elem().Interface().(Payload) }

// Unmarshal decodes an event's data into p, a pointer to one of the
// payload types, replacing what it held. Absent data (nil, empty or
// null) is the zero payload.
//
// Data that is not a JSON object is an error. So is a field a fold
// depends on that does not have its type's shape (the text of a message,
// the content of a remember, …: the package documentation lists them);
// p then holds every field that did decode. Any other field is read
// best effort: a value of another shape leaves it zero and is no error,
// so metadata a host writes its own way never makes an event unreadable.
// Older shapes are upcast into today's (upcast.go).
func Unmarshal(data []byte, p Payload) error {
	// Every payload type decodes itself (upcast.go) and checks the JSON
	// as it goes, so it is called directly: json.Unmarshal would scan the
	// data once more before calling it.
	u, ok := p.(json.Unmarshaler)
	if !ok {
		return fmt.Errorf("payload: Unmarshal needs a pointer to a payload, got %T", p)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("null")
	}
	if err := u.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("decode %s data: %w", p.EventType(), err)
	}
	return nil
}

// Marshal encodes p as an event's data: compact JSON without HTML
// escaping, so "a < b" is written as it is (the way events.Marshal
// writes envelopes) and a line read back carries the producer's text.
func Marshal(p Payload) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode %s data: %w", p.EventType(), err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
