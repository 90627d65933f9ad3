package projector

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
)

// sessionKey names a sessions row. A session is counted per stream so
// that folds of different streams touch different rows and commute.
type sessionKey struct{ session, stream string }

// sessionAcc is what one Fold call learned about one session in one
// stream. It is merged into the sessions row once, at the end of the
// call, by an upsert whose rules give the same row however the stream's
// events were split into calls (the chunked CatchUp test proves it).
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

// upsertSessionSQL merges a call's sessionAcc into the row. ?16 is
// cwdFromStart, ?17 is started.
const upsertSessionSQL = `
INSERT INTO sessions (session, stream, cwd, origin, parent, agent_preset, started_at, ended_at,
                      first_seq, last_seq, first_time, last_time, events, user_turns, user_chars)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
ON CONFLICT (session, stream) DO UPDATE SET
    cwd          = CASE WHEN ?16 OR sessions.cwd = '' THEN excluded.cwd ELSE sessions.cwd END,
    origin       = CASE WHEN ?17 THEN excluded.origin ELSE sessions.origin END,
    parent       = CASE WHEN ?17 THEN excluded.parent ELSE sessions.parent END,
    agent_preset = CASE WHEN ?17 THEN excluded.agent_preset ELSE sessions.agent_preset END,
    started_at   = CASE WHEN ?17 THEN excluded.started_at ELSE sessions.started_at END,
    ended_at     = CASE WHEN excluded.ended_at <> '' THEN excluded.ended_at ELSE sessions.ended_at END,
    last_seq     = excluded.last_seq,
    last_time    = excluded.last_time,
    events       = sessions.events + excluded.events,
    user_turns   = sessions.user_turns + excluded.user_turns,
    user_chars   = sessions.user_chars + excluded.user_chars`

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
		if _, err := f.exec(upsertSessionSQL, k.session, k.stream, a.cwd, a.origin, a.parent, a.agentPreset,
			a.startedAt, a.endedAt, int64(a.firstSeq), int64(a.lastSeq), a.firstTime, a.lastTime,
			a.events, a.userTurns, a.userChars, a.cwdFromStart, a.started); err != nil {
			return fmt.Errorf("fold: write session %s of %s: %w", k.session, k.stream, err)
		}
	}
	return nil
}
