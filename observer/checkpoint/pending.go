package checkpoint

import (
	"context"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// Checkpoint triggers (ARCHITECTURE §7): a session's pending work is
// checkpointed once it holds this many user turns or characters, once it
// has been idle this long, or when it holds a task/end,
// compaction/summary or session/end.
const (
	TriggerUserTurns = 10
	TriggerChars     = 4000
	TriggerIdle      = 5 * time.Minute
)

// Trigger reasons, as Due returns them and Result.Reason
// reports them.
const (
	ReasonSessionEnd = "session-end"
	ReasonCompaction = "compaction"
	ReasonTaskEnd    = "task-end"
	ReasonUserTurns  = "user-turns"
	ReasonChars      = "chars"
	ReasonIdle       = "idle"
	ReasonRequest    = "request"
)

// maxContextRunes caps each assistant and tool message given to a
// distiller: they are context, never learnt from, and a long tool output
// would otherwise eat the input budget that the user's words need.
const maxContextRunes = 2000

// Pending is the work a session has waiting in one stream: its events
// after the last range a checkpoint claimed. It is derived from the index
// alone (sessions, events, and the memory/ops events that record each
// claim), so a restart loses nothing and no state file is kept.
type Pending struct {
	Stream  string `json:"stream"`
	Session string `json:"session"`
	Cwd     string `json:"cwd,omitempty"`
	Origin  string `json:"origin,omitempty"` // top | subagent

	// Claimed is the last seq of the session's last claimed range (0:
	// never checkpointed); the pending events are From..To, From being
	// the first event of the session after Claimed and To its last.
	Claimed uint64 `json:"claimed"`
	From    uint64 `json:"from"`
	To      uint64 `json:"to"`

	Events    int `json:"events"`
	UserTurns int `json:"userTurns"` // user/message events the user typed (not injected)
	UserChars int `json:"userChars"` // their text length in runes
	// LastActivity is the newest event time among the pending events.
	LastActivity time.Time `json:"lastActivity"`

	TaskEnd    bool `json:"taskEnd,omitempty"`
	Compaction bool `json:"compaction,omitempty"`
	SessionEnd bool `json:"sessionEnd,omitempty"`
}

// Due reports whether p's checkpoint should fire at now, and why. Pending
// work without a user turn is never due: distillers learn only from what
// the user typed, so there is nothing to distil. now is compared with
// LastActivity for the idle trigger; on the automatic path it is an event
// time (the newest in the index), so idleness is measured in the log's
// own clock. A zero now never triggers idle.
func Due(p Pending, now time.Time) (reason string, ok bool) {
	switch {
	case p.UserTurns == 0:
		return "", false
	case p.SessionEnd:
		return ReasonSessionEnd, true
	case p.Compaction:
		return ReasonCompaction, true
	case p.TaskEnd:
		return ReasonTaskEnd, true
	case p.UserTurns >= TriggerUserTurns:
		return ReasonUserTurns, true
	case p.UserChars >= TriggerChars:
		return ReasonChars, true
	case !now.IsZero() && !p.LastActivity.IsZero() && now.Sub(p.LastActivity) >= TriggerIdle:
		return ReasonIdle, true
	}
	return "", false
}

// Scan lists every session with unclaimed events, by stream and then
// session.
func Scan(ctx context.Context, eng *observer.Engine) ([]Pending, error) {
	return engine{eng}.scan(ctx)
}

func (e engine) scan(ctx context.Context) ([]Pending, error) {
	return e.pending(ctx, "", "")
}

// pending lists the pending work of the sessions of stream and session
// ("" for any).
func (e engine) pending(ctx context.Context, stream, session string) ([]Pending, error) {
	claims, err := e.claims(ctx, stream, session)
	if err != nil {
		return nil, err
	}
	// Sessions that never had a user turn cannot be due: skip them
	// without reading their events.
	spans, err := e.Store().SessionsWithTurns(ctx, stream, session)
	if err != nil {
		return nil, err
	}
	var out []Pending
	for _, s := range spans {
		p := Pending{Stream: s.Stream, Session: s.Session, Cwd: s.Cwd, Origin: s.Origin}
		p.Claimed = claims[claimKey{p.Stream, p.Session}]
		p.From, p.To = max(p.Claimed+1, s.FirstSeq), s.LastSeq
		if p.From > p.To {
			continue
		}
		if err := e.scanPending(ctx, &p, nil); err != nil {
			return nil, err
		}
		if p.Events > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

type claimKey struct{ stream, session string }

// claims returns, per session and stream, the end of the last range a
// checkpoint claimed: the largest data.to of its memory/ops events
// (found through the partial index events_memory_ops), for the sessions
// of stream and session ("" for any).
func (e engine) claims(ctx context.Context, stream, session string) (map[claimKey]uint64, error) {
	cs, err := e.Store().CheckpointClaims(ctx, stream, session)
	if err != nil {
		return nil, err
	}
	out := make(map[claimKey]uint64, len(cs))
	for _, c := range cs {
		out[claimKey{c.Stream, c.Session}] = c.To
	}
	return out, nil
}

// claimedTo returns the end of the last claimed range of one session.
func (e engine) claimedTo(ctx context.Context, stream, session string) (uint64, error) {
	if session == "" {
		return 0, nil // as in pending: a claim names its session
	}
	c, err := e.claims(ctx, stream, session)
	if err != nil {
		return 0, err
	}
	return c[claimKey{stream, session}], nil
}

// scanPending reads the session's events p.From..p.To, fills in the
// counts of p and moves p.From to the first of them. With msgs non-nil
// it also collects the messages a distiller reads: user and assistant
// messages and tool results, each with its event id, assistant and tool
// text cut to maxContextRunes, injected ones left out. The counts
// (UserTurns, UserChars) never include injected text either.
func (e engine) scanPending(ctx context.Context, p *Pending, msgs *[]distill.Message) error {
	p.Events, p.UserTurns, p.UserChars = 0, 0, 0
	p.TaskEnd, p.Compaction, p.SessionEnd = false, false, false
	p.LastActivity = time.Time{}
	var first uint64
	err := e.Store().ScanSessionEvents(ctx, p.Stream, p.Session, p.From, p.To, func(ev sqlstore.Event) error {
		typ := ev.Type
		if typ == events.TypeMemoryOps {
			return nil // a checkpoint's own output is not the session's work
		}
		if p.Events == 0 {
			first = ev.Seq
		}
		p.Events++
		if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil && t.After(p.LastActivity) {
			p.LastActivity = t
		}
		switch typ {
		case events.TypeTaskEnd:
			p.TaskEnd = true
		case events.TypeCompactionSummary:
			p.Compaction = true
		case events.TypeSessionEnd:
			p.SessionEnd = true
		}
		text, injected, ok := projector.EpisodeText(typ, ev.Data)
		if !ok {
			return nil
		}
		m := distill.Message{EventID: ev.ID, Seq: ev.Seq, Text: text, Time: ev.Time, Injected: injected}
		switch typ {
		case events.TypeUserMessage:
			m.Role = distill.RoleUser
			if !injected {
				p.UserTurns++
				p.UserChars += utf8.RuneCountInString(text)
			}
		case events.TypeAssistantMessage:
			m.Role = distill.RoleAssistant
		case events.TypeToolResult:
			m.Role = distill.RoleTool
		default:
			return nil
		}
		if msgs == nil || injected {
			// Text the host or dshmem injected (runtime-context snapshots,
			// memory shown back, dshmem's own tool results) is never
			// distilled: it is not given to the distiller at all, so it
			// can neither be learnt nor take the input budget that the
			// user's words need.
			return nil
		}
		if m.Role != distill.RoleUser {
			m.Text = distill.TruncateRunes(m.Text, maxContextRunes)
		}
		*msgs = append(*msgs, m)
		return nil
	})
	if err != nil {
		return err
	}
	if p.Events > 0 {
		p.From = first
	}
	return nil
}

// newestEventTime is the newest event time of any session in the index:
// the clock of the automatic path's idle trigger.
func (e engine) newestEventTime(ctx context.Context) (time.Time, error) {
	times, err := e.Store().SessionLastTimes(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var newest time.Time
	for _, s := range times {
		// Times carry their own offsets, so they are compared parsed.
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(newest) {
			newest = t
		}
	}
	return newest, nil
}
