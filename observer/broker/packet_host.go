package broker

import (
	"context"
	"slices"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/distill"
)

// What the broker does for a host plugin: claimed prompts, long polls,
// heartbeats and the memory of sessions that ended.

// Claim observes the prompt a host claimed for session's next turn, before
// the host's log (and so the watcher) has it, and computes the packet for
// it at once: the first step of a turn gets memory for what the user just
// asked. The runtime is created if the session is new; stream is where
// its memory lives ("" keeps what the runtime knows, else global). When
// the user/message with the same text arrives later it is not observed
// twice.
func (b *Broker) Claim(ctx context.Context, session, stream, cwd, origin, messageID, text string, step int) {
	b.mu.Lock()
	rt := b.sessions[session]
	if rt == nil {
		rt = b.addSessionLocked(session)
		delete(b.ended, session) // a resumed session
	}
	if stream != "" {
		rt.stream = stream
	}
	if rt.stream == "" {
		rt.stream = observer.GlobalStream
	}
	if cwd != "" {
		rt.cwd = cwd
	}
	if origin != "" {
		rt.origin = origin
	}
	if step > rt.step {
		rt.step = step
	}
	rt.seen = b.now()
	if messageID == "" || !slices.Contains(rt.msgIDs, messageID) {
		// Not observed yet: the log brings it later.
		text = claimText(text)
		rt.claimed, rt.claimedID = text, messageID
		rt.sawMsg(messageID)
		rt.push(segment{typ: events.TypeUserMessage, msgID: messageID, text: text, correction: isCorrection(text)}, b.opts.Ring)
		rt.ver++
		rt.dirty = true
	}
	b.computeLocked(ctx, session)
	b.mu.Unlock()
}

// maxPromptChars bounds the prompt text a claimed packet is computed from
// (the query keeps 400 characters of it anyway).
const maxPromptChars = 4000

// claimText is a prompt as Claim keeps it, so the same text from the log
// compares equal however long it is.
func claimText(s string) string { return distill.TruncateRunes(strings.TrimSpace(s), maxPromptChars) }

// sawMsg records a user message id as observed; the last 16 are kept.
func (rt *sessionRuntime) sawMsg(id string) {
	if id == "" || slices.Contains(rt.msgIDs, id) {
		return
	}
	if len(rt.msgIDs) >= 16 {
		rt.msgIDs = append(rt.msgIDs[:0], rt.msgIDs[1:]...)
	}
	rt.msgIDs = append(rt.msgIDs, id)
}

// endedSession is when a session ended: the event's own time, and when
// the broker saw it.
type endedSession struct {
	time time.Time
	seen time.Time
}

// maxEnded bounds the ended sessions remembered; each is kept for an hour.
const maxEnded = 4096

// markEnded remembers that ev ended its session, so rows of the session
// that the watcher reads after the end (the host wrote them before it)
// do not bring a runtime back. b.mu is held.
func (b *Broker) markEnded(ev *events.Envelope, now time.Time) {
	t, err := time.Parse(time.RFC3339Nano, ev.Time)
	if err != nil {
		return
	}
	if len(b.ended) >= maxEnded {
		for id, e := range b.ended {
			if now.Sub(e.seen) > time.Hour || len(b.ended) >= maxEnded {
				delete(b.ended, id)
			}
		}
	}
	b.ended[ev.Session] = endedSession{time: t, seen: now}
}

// endedBefore reports whether ev belongs to a session that ended at or
// after ev's own time. A later event (a resumed session) forgets the end.
// b.mu is held.
func (b *Broker) endedBefore(ev *events.Envelope) bool {
	e, ok := b.ended[ev.Session]
	if !ok {
		return false
	}
	if t, err := time.Parse(time.RFC3339Nano, ev.Time); err == nil && !t.After(e.time) {
		return true
	}
	delete(b.ended, ev.Session)
	return false
}

// Touch marks session as alive (a host's heartbeat for an open session),
// so its runtime is not freed as idle.
func (b *Broker) Touch(session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rt := b.sessions[session]; rt != nil {
		rt.seen = b.now()
	}
}

// FetchOrWait is Fetch, and when there is no packet to serve it also
// returns a channel that is closed when the session gets its next packet
// or its runtime ends (nil for a session the broker does not know): a
// host can wait for memory instead of asking at every step.
func (b *Broker) FetchOrWait(session string, step int, hasStep bool) (FetchResult, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res := b.fetchLocked(session, 0, false, step, hasStep)
	if res.Packet != nil {
		return res, nil
	}
	rt := b.sessions[session]
	if rt == nil {
		return res, nil
	}
	if rt.notify == nil {
		rt.notify = make(chan struct{})
	}
	return res, rt.notify
}

// wakeLocked closes rt's notify channel: a packet was computed, or the
// runtime ends. b.mu is held.
func (rt *sessionRuntime) wakeLocked() {
	if rt.notify != nil {
		close(rt.notify)
		rt.notify = nil
	}
}
