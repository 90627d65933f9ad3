package distill

import (
	"context"
	"errors"

	"dshmem/events/payload"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
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
func (e Entry) active() bool { return e.Status == payload.StatusActive || e.Status == "" }

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
//
// A distiller's op never writes a field's zero value: no empty
// description, tags or terms (nil, not empty), no importance 0 and no
// confidence 0 (nil). The projector then takes the default for a new
// entry and keeps the target's for a revise, as it always has; text,
// optional, nonZero and value below keep the rule in one place.
type Op = payload.Op

// optional is &s, or nil for "": an empty description is not written.
func optional(s string) *string { return nonZero(s) }

// nonZero is &v, or nil for the zero value, which a distiller's op never
// writes.
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// value is *p, or the zero value when p is nil.
func value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// nilIfEmpty is l, or nil when it holds nothing: an empty list is not
// written.
func nilIfEmpty(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	return l
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
