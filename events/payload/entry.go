package payload

import "slices"

// Entry types of the memory model (ARCHITECTURE §5). memory/remember and
// memory/ops name them and every entry carries one. Part of the on-disk
// format; do not change.
const (
	TypePreference   = "preference"
	TypeDecision     = "decision"
	TypeArchitecture = "architecture"
	TypeRule         = "rule"
	TypeFact         = "fact"
	TypeFix          = "fix"
	TypeProcedure    = "procedure"
)

// EntryTypes lists every entry type, in the order of ARCHITECTURE §5.
var EntryTypes = []string{
	TypePreference, TypeDecision, TypeArchitecture, TypeRule, TypeFact, TypeFix, TypeProcedure,
}

// DefaultEntryType is the type of an entry whose event names none, or a
// type outside EntryTypes.
const DefaultEntryType = TypeFact

// KnownEntryType reports whether t is one of EntryTypes, exactly (no
// case folding: folds decide what they accept around it).
func KnownEntryType(t string) bool { return slices.Contains(EntryTypes, t) }

// Entry statuses (ARCHITECTURE §5). Only active entries reach summaries;
// a conflict is returned only when a query hits it; superseded and
// forgotten entries stay for audit. Part of the index format read by
// `dshmem entries --json`; do not change.
const (
	StatusActive     = "active"
	StatusConflict   = "conflict"
	StatusSuperseded = "superseded"
	StatusForgotten  = "forgotten"
)

// Statuses lists every entry status, in the order of ARCHITECTURE §5.
var Statuses = []string{StatusActive, StatusConflict, StatusSuperseded, StatusForgotten}

// KnownStatus reports whether s is one of Statuses.
func KnownStatus(s string) bool { return slices.Contains(Statuses, s) }

// Op kinds of a memory/ops event (Op.Op; ARCHITECTURE §5). Part of the
// on-disk format; do not change.
const (
	OpAdd       = "add"
	OpRevise    = "revise"
	OpSupersede = "supersede"
	OpConflict  = "conflict"
	OpForget    = "forget"
)

// OpKinds lists every op kind.
var OpKinds = []string{OpAdd, OpRevise, OpSupersede, OpConflict, OpForget}

// KnownOp reports whether op is one of OpKinds, exactly.
func KnownOp(op string) bool { return slices.Contains(OpKinds, op) }

// Evidence op kinds (issue 16): ops a checkpoint derives from what
// happened in a session, deterministically, never proposed by a
// distiller (distill.Validate refuses them from one). They ride in the
// same memory/ops event as the distiller's answer, so replay applies
// them without recomputing anything. Part of the on-disk format; do not
// change.
//
//	confidence  Delta moves the target entry's confidence (clamped to 0–1)
//	alias       Alias is the user's short form of Expansion, NewQuote their words
//	procedure   Procedure is a procedure's whole state after a stage change
const (
	OpConfidence = "confidence"
	OpAlias      = "alias"
	OpProcedure  = "procedure"
)

// EvidenceOpKinds lists every evidence op kind.
var EvidenceOpKinds = []string{OpConfidence, OpAlias, OpProcedure}

// KnownEvidenceOp reports whether op is one of EvidenceOpKinds, exactly.
func KnownEvidenceOp(op string) bool { return slices.Contains(EvidenceOpKinds, op) }

// Procedure stages (issue 16): P0 observed (a run that succeeded once),
// P1 candidate, P2 validated, P3 active (the only stage packets offer),
// P4 deprecated. Part of the on-disk format; do not change.
const (
	StageObserved   = "P0"
	StageCandidate  = "P1"
	StageValidated  = "P2"
	StageActive     = "P3"
	StageDeprecated = "P4"
)

// KnownStage reports whether s is one of the procedure stages.
func KnownStage(s string) bool {
	return s == StageObserved || s == StageCandidate || s == StageValidated || s == StageActive || s == StageDeprecated
}

// LowConfidence is the confidence below which an entry is marked "low
// confidence" wherever it is shown.
const LowConfidence = 0.5

// Provenances of an op (Op.Provenance): who proposed it.
const (
	ProvenanceDistiller = "distiller" // a checkpoint's distiller
	ProvenanceHandEdit  = "hand-edit" // a hand edit of a projection, read back by sync
	ProvenanceRemember  = "remember"  // an explicit memory write
	ProvenanceEvidence  = "evidence"  // a checkpoint's evidence pass (EvidenceOpKinds)
)

// Origins of a session (SessionStart.Origin).
const (
	OriginTop      = "top"
	OriginSubagent = "subagent"
)

// Importance of an entry: an integer 0–3, DefaultImportance when an event
// gives none.
const (
	MinImportance     = 0
	MaxImportance     = 3
	DefaultImportance = 1
)

// DefaultConfidence is the confidence (0–1) of an entry whose op gives
// none.
const DefaultConfidence = 1.0

// ClampImportance brings a number into today's importance: clamped to
// 0–3, then truncated toward zero (2.5 is 2, 0.8 is 0, 7 is 3). Older
// producers wrote floats (`import legacy` kept the legacy store's
// number); this is how every fold has read them.
func ClampImportance(v float64) int {
	return int(min(max(v, MinImportance), MaxImportance))
}

// ClampConfidence clamps a confidence to 0–1.
func ClampConfidence(v float64) float64 {
	return min(max(v, 0), 1)
}
