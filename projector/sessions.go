package projector

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore"
)

// sessionKey names a sessions row. A session is counted per stream so
// that folds of different streams touch different rows and commute.
type sessionKey struct{ session, stream string }

// sessionAcc is what one Fold call learned about one session in one
// stream. It is merged into the sessions row once, at the end of the
// call, by an upsert whose rules give the same row however the stream's
// events were split into calls (sqlstore.FoldTx.UpsertSession; the
// chunked CatchUp test proves it).
type sessionAcc struct {
	firstSeq, lastSeq   uint64
	firstTime, lastTime string
	events              int64
	userTurns           int64
	userChars           int64

	cwd          string
	cwdFromStart bool // cwd came from a session/start: it overrides

	started                     bool // a session/start was folded in this call
	origin, parent, agentPreset string
	startedAt                   string
	endedAt                     string
}

func (f *fold) session(ev *events.Envelope, p *prepared) {
	if ev.Session == "" {
		return
	}
	k := sessionKey{ev.Session, ev.Stream}
	a := f.sessions[k]
	if a == nil {
		a = &sessionAcc{firstSeq: ev.Seq, firstTime: ev.Time}
		f.sessions[k] = a
	}
	a.lastSeq, a.lastTime = ev.Seq, ev.Time
	a.events++
	if a.cwd == "" && ev.Cwd != "" {
		a.cwd = ev.Cwd
	}
	switch ev.Type {
	case events.TypeSessionStart:
		var d payload.SessionStart
		_ = payload.Unmarshal(ev.Data, &d) // a malformed start still starts the session
		a.started = true
		a.origin, a.parent, a.agentPreset = d.Origin, d.Parent, d.AgentPreset
		a.startedAt = ev.Time
		if ev.Cwd != "" {
			a.cwd, a.cwdFromStart = ev.Cwd, true
		}
	case events.TypeSessionEnd:
		a.endedAt = ev.Time
	case events.TypeUserMessage:
		if p.episode && !p.injected && strings.TrimSpace(p.text) != "" {
			a.userTurns++
			a.userChars += int64(utf8.RuneCountInString(p.text))
		}
	}
}

func (f *fold) flushSessions() error {
	keys := make([]sessionKey, 0, len(f.sessions))
	for k := range f.sessions {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sessionKey) int {
		if c := strings.Compare(a.session, b.session); c != 0 {
			return c
		}
		return strings.Compare(a.stream, b.stream)
	})
	for _, k := range keys {
		a := f.sessions[k]
		if err := f.tx.UpsertSession(&sqlstore.SessionDelta{Session: k.session, Stream: k.stream,
			FirstSeq: a.firstSeq, LastSeq: a.lastSeq, FirstTime: a.firstTime, LastTime: a.lastTime,
			Events: a.events, UserTurns: a.userTurns, UserChars: a.userChars,
			Cwd: a.cwd, CwdFromStart: a.cwdFromStart,
			Started: a.started, Origin: a.origin, Parent: a.parent, AgentPreset: a.agentPreset,
			StartedAt: a.startedAt, EndedAt: a.endedAt}); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
	}
	return nil
}
