package distill

import (
	"context"
	"errors"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Op names. An Op's Op field holds one of these.
const (
	OpAdd       = "add"
	OpRevise    = "revise"
	OpSupersede = "supersede"
	OpConflict  = "conflict"
	OpForget    = "forget"
)

// Entry types (ARCHITECTURE §5).
const (
	TypePreference   = "preference"
	TypeDecision     = "decision"
	TypeArchitecture = "architecture"
	TypeRule         = "rule"
	TypeFact         = "fact"
	TypeFix          = "fix"
	TypeProcedure    = "procedure"
)

// Entry statuses.
const (
	StatusActive     = "active"
	StatusConflict   = "conflict"
	StatusSuperseded = "superseded"
	StatusForgotten  = "forgotten"
)

// Provenances of an Op.
const (
	ProvenanceDistiller = "distiller"
	ProvenanceHandEdit  = "hand-edit"
	ProvenanceRemember  = "remember"
)

// ResultVersion is the version of the ops schema this package reads and
// writes; part of the memory/ops event format; do not change.
const ResultVersion = 1

// Caps of the distiller's input (ARCHITECTURE §7).
const (
	MaxInputChars    = 40000     // runes of message text given to a distiller
	MaxRelated       = 20        // existing entries given as context
	MaxRelatedBytes  = 12 * 1024 // bytes of those entries, as rendered
	MaxTitleRunes    = 160
	MaxDescRunes     = 500
	MaxContentRunes  = 4000
	MaxTags          = 8
	MaxTerms         = 16
	DuplicateDiceMin = 0.68 // an add at least this close to an active entry is a revise
)

// ErrMalformedAnswer is returned (wrapped, with detail) when a distiller's
// answer is not JSON in one of the shapes ParseResult reads.
var ErrMalformedAnswer = errors.New("distill: malformed answer")

// ErrNoAPIKey is returned by NewOpenAI when no API key is configured.
var ErrNoAPIKey = errors.New("distill: no API key: set DEEPSEEK_API_KEY or DSHMEM_LLM_API_KEY, or OpenAIConfig.APIKey")

// Message is one observed message of the claimed range.
type Message struct {
	EventID  string
	Seq      uint64
	Role     string // "user" | "assistant" | "tool"
	Injected bool   // a user-role message a plugin put there (e.g. injected memory): never learnt from
	Text     string
	Time     string
}

// userTyped reports whether m is text a person typed: the only text any
// distiller learns from.
func (m Message) userTyped() bool { return m.Role == RoleUser && !m.Injected }

// Entry is an existing memory entry, given to a distiller as context and
// used by Validate to check ops aimed at it.
type Entry struct {
	ID, Scope, Type, Title, Description, Content string
	Tags, Terms                                  []string
	Importance                                   int
	Status                                       string // active|conflict|superseded|forgotten
	ConflictGroup                                string
}

// active reports whether e is active; an empty status counts as active.
func (e Entry) active() bool { return e.Status == StatusActive || e.Status == "" }

// Request is one distillation: the claimed seq range of a stream's
// session, its messages and the related existing entries.
type Request struct {
	Stream, Session string
	From, To        uint64 // claimed seq range, inclusive; To == 0 means every message given
	Messages        []Message
	Related         []Entry // ≤ MaxRelated, ≤ MaxRelatedBytes: see SelectRelated
}

// inRange reports whether m belongs to the claimed range of r.
func (r Request) inRange(m Message) bool {
	return r.To == 0 || (m.Seq >= r.From && m.Seq <= r.To)
}

// Op is one memory operation, as written into a memory/ops event.
type Op struct {
	Op               string   `json:"op"` // add | revise | supersede | conflict | forget
	TargetID         string   `json:"targetId,omitempty"`
	OldQuote         string   `json:"oldQuote,omitempty"`
	NewQuote         string   `json:"newQuote,omitempty"`
	EvidenceEventIDs []string `json:"evidenceEventIds,omitempty"`
	Type             string   `json:"type,omitempty"`
	Title            string   `json:"title,omitempty"`
	Description      string   `json:"description,omitempty"`
	Content          string   `json:"content,omitempty"`
	Tags             []string `json:"tags,omitempty"`
	Terms            []string `json:"terms,omitempty"`
	Importance       int      `json:"importance,omitempty"`
	Confidence       float64  `json:"confidence,omitempty"`
	Reason           string   `json:"reason,omitempty"`
	Provenance       string   `json:"provenance,omitempty"` // "distiller" | "hand-edit" | "remember"
}

// Result is a distiller's answer.
type Result struct {
	Version    int  `json:"version"`
	Operations []Op `json:"operations"`
}

// Distiller turns a claimed range of conversation into memory ops. Its
// answer is not trusted: pass it through Validate before writing it.
type Distiller interface {
	Name() string
	Model() string
	Distill(ctx context.Context, req Request) (Result, error)
}
