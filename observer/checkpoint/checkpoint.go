package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/distill"
	"dshmem/projector"
)

// Request says which sessions to checkpoint. The zero value
// checkpoints every session a trigger has fired for, with the rules
// distiller, measuring idleness in event time: the automatic path.
type Request struct {
	Cwd     string // only the scope of this directory (Engine.Scope); wins over Stream
	Stream  string // only this stream ("global" or "ws-…"); "" for every stream
	Session string // only this session; "" for every session

	// Force checkpoints every session with pending user turns, whether a
	// trigger fired or not: an explicit request.
	Force bool

	// Now is the clock of the idle trigger and the time written on the
	// memory/ops events. Zero means the newest event time in the index,
	// so that idleness is measured in the log's own clock.
	Now time.Time

	// Distiller distils each claimed range; nil means distill.NewRules().
	Distiller distill.Distiller
}

// Result is what one checkpoint of one claimed range did.
type Result struct {
	Stream  string `json:"stream"`
	Session string `json:"session"`
	Reason  string `json:"reason"` // the trigger: see the Reason constants
	From    uint64 `json:"from"`   // the claimed seq range
	To      uint64 `json:"to"`

	Messages  int    `json:"messages"` // messages given to the distiller
	Related   int    `json:"related"`  // existing entries given as context
	Distiller string `json:"distiller"`
	Model     string `json:"model"`

	// Checkpoint and Seq name the committed memory/ops event; both are
	// empty when nothing was committed.
	Checkpoint string `json:"checkpoint,omitempty"`
	Seq        uint64 `json:"seq,omitempty"`

	Ops []distill.Op `json:"ops"`
	// GlobalOps are the confidence ops for global entries, committed as a
	// memory/ops event of the global stream (GlobalSeq) before the
	// checkpoint's own; nil when there were none or another commit of the
	// same claim holds them.
	GlobalOps []distill.Op `json:"globalOps,omitempty"`
	GlobalSeq uint64       `json:"globalSeq,omitempty"`
	// Entries[i] is the entry Ops[i] creates (add, supersede, conflict)
	// or changes (revise, forget).
	Entries  []string           `json:"entries"`
	Rejected []distill.Rejected `json:"rejected,omitempty"`

	// Duplicate: another checkpoint claimed the range first; nothing was
	// committed by this one.
	Duplicate bool `json:"duplicate,omitempty"`
	// Err: the distiller failed; nothing was committed and the range
	// stays pending for the next trigger.
	Err error `json:"-"`
}

// maxChunksPerSession bounds the ranges one Checkpoint call claims for a
// session (each holds up to distill.MaxInputChars of text); what is left
// stays pending for the next call.
const maxChunksPerSession = 64

// Run distils the pending work of the sessions req selects, one
// claimed range at a time, and commits each answer as one memory/ops
// event (projector/ops.go folds it into entries).
//
// For each range: the claim (its messages and the related entries) is
// read from the index, the distiller runs outside the intake mutex (it
// may take seconds), its answer goes through distill.Validate, and the
// event is appended through the ordinary intake. The event's id derives
// from (stream, session, first claimed seq), and intake drops an id its
// stream already holds under its mutex, so two checkpoints racing for the
// same range commit once; the loser's result says Duplicate. A distiller
// error writes nothing: the range stays pending (the log says so, since
// claims are read from the memory/ops events) and is tried again by the
// next call.
//
// A session whose pending text is over distill.MaxInputChars is claimed
// in several ranges, oldest first, so nothing is dropped unread.
//
// The error is non-nil only when the index or the log failed, or ctx
// ended; the results so far are returned with it.
func Run(ctx context.Context, eng *observer.Engine, req Request) ([]Result, error) {
	return engine{eng}.run(ctx, req)
}

// engine is the observer engine as this package uses it.
type engine struct{ *observer.Engine }

func (e engine) run(ctx context.Context, req Request) ([]Result, error) {
	if e.ReadOnly() {
		return nil, observer.ErrReadOnly
	}
	d := req.Distiller
	if d == nil {
		d = distill.NewRules()
	}
	stream := req.Stream
	if req.Cwd != "" {
		stream = e.Scope(req.Cwd).Stream
	}
	now := req.Now
	if now.IsZero() {
		var err error
		if now, err = e.newestEventTime(ctx); err != nil {
			return nil, err
		}
	}
	ps, err := e.pending(ctx, stream, req.Session)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, p := range ps {
		reason, ok := Due(p, now)
		if req.Force && p.UserTurns > 0 && !ok {
			reason, ok = ReasonRequest, true
		}
		if !ok {
			continue
		}
		for range maxChunksPerSession {
			res, more, err := e.checkpointRange(ctx, p, reason, d, now)
			if err != nil {
				return out, err
			}
			out = append(out, res)
			if res.Err != nil || !more {
				break
			}
			next, err := e.pending(ctx, p.Stream, p.Session)
			if err != nil {
				return out, err
			}
			if len(next) == 0 || next[0].UserTurns == 0 {
				break
			}
			p = next[0]
		}
	}
	return out, nil
}

// checkpointRange claims, distils and commits the oldest range of p that
// fits the distiller's input; more reports that p has pending text after
// it.
func (e engine) checkpointRange(ctx context.Context, p Pending, reason string, d distill.Distiller, now time.Time) (res Result, more bool, err error) {
	res = Result{Stream: p.Stream, Session: p.Session, Reason: reason, Distiller: d.Name(), Model: d.Model()}
	req, more, err := e.claim(ctx, p)
	if err != nil {
		return res, false, err
	}
	res.From, res.To, res.Messages, res.Related = req.From, req.To, len(req.Messages), len(req.Related)
	if req.From > req.To {
		// Another checkpoint claimed all of it since p was read.
		res.Duplicate = true
		return res, false, nil
	}

	answer := distill.Result{Version: distill.ResultVersion}
	if hasUserText(req.Messages) {
		answer, err = d.Distill(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return res, false, fmt.Errorf("checkpoint session %s: %w", p.Session, ctx.Err())
			}
			res.Err = fmt.Errorf("distill session %s seqs %d..%d with %s: %w", p.Session, req.From, req.To, d.Name(), err)
			return res, false, nil
		}
	}
	ops, rejected := distill.Validate(req, answer)
	ops, rejected = ownScope(req, ops, rejected)
	// The evidence pass (evidence.go) adds its ops after the distiller's.
	pass, err := e.evidence(ctx, p, req)
	if err != nil {
		return res, false, err
	}
	ops, rejected = dropAliasAdds(ops, rejected, pass.aliasEv)
	ops = append(ops, pass.ops...)

	ck, err := newCheckpointID()
	if err != nil {
		return res, false, err
	}
	data := payload.Ops{Checkpoint: ck, Session: req.Session, From: req.From, To: req.To, Distiller: d.Name(), Model: d.Model()}
	line, ops, rejected, err := opsEventLine(req.Stream, checkpointEventID(req.Session, req.From), data, ops, rejected, now)
	if err != nil {
		return res, false, err
	}
	res.Ops, res.Rejected = ops, rejected
	// The global evidence first, then the checkpoint's own event, one
	// commit at a time (global.go).
	commitMu.Lock()
	defer commitMu.Unlock()
	if ok, err := e.commitGlobal(ctx, &res, req, ck, pass.globalOps, now); err != nil || !ok {
		return res, more || res.Duplicate, err
	}
	_, outs, err := e.Ingest(ctx, [][]byte{line})
	if err != nil {
		return res, false, fmt.Errorf("commit checkpoint of session %s: %w", p.Session, err)
	}
	switch o := outs[0]; o.Status {
	case observer.StatusDuplicate:
		res.Duplicate, res.Ops = true, nil
		return res, more, nil
	case observer.StatusRejected:
		return res, false, fmt.Errorf("commit checkpoint of session %s: the memory/ops event was refused: %v", p.Session, o.Error)
	default:
		res.Checkpoint, res.Seq = ck, o.Seq
	}
	res.Entries = make([]string, len(ops))
	for i, o := range ops {
		switch o.Op {
		case payload.OpAdd, payload.OpSupersede, payload.OpConflict:
			res.Entries[i] = projector.EntryID(p.Stream, res.Seq, i)
		case payload.OpAlias:
		default: // a procedure op's target is the procedure
			res.Entries[i] = o.TargetID
		}
	}
	return res, more, nil
}

// claim reads the oldest range of p's pending events whose messages fit
// distill.MaxInputChars (at least one message, cut by distill.CapInput
// if it alone is too long) and builds the distiller's request: the
// messages, and the related active and conflict entries of the stream
// and of global (distill.SelectRelated). It holds the intake mutex, so
// the claim is read between two intake calls.
func (e engine) claim(ctx context.Context, p Pending) (req distill.Request, more bool, err error) {
	err = e.Settled(func() error {
		var err error
		req, more, err = e.claimSettled(ctx, p)
		return err
	})
	return req, more, err
}

// claimSettled is claim's work, run while intake is held.
func (e engine) claimSettled(ctx context.Context, p Pending) (req distill.Request, more bool, err error) {
	// Re-read the claim: another checkpoint may have committed since p
	// was computed.
	claimed, err := e.claimedTo(ctx, p.Stream, p.Session)
	if err != nil {
		return req, false, err
	}
	p.From = max(p.From, claimed+1)
	var msgs []distill.Message
	if p.From <= p.To {
		if err := e.scanPending(ctx, &p, &msgs); err != nil {
			return req, false, err
		}
	}
	to, total := p.To, 0
	for i, m := range msgs {
		n := utf8.RuneCountInString(m.Text)
		if i > 0 && total+n > distill.MaxInputChars {
			to, more = m.Seq-1, true
			msgs = msgs[:i]
			break
		}
		total += n
	}
	if t, ok, err := e.globalClaim(ctx, p.Stream, p.Session, p.From); err != nil {
		return req, false, err
	} else if ok && t >= p.From && t < to {
		// A commit of this claim wrote its global evidence and stopped
		// before its own event (global.go): claim the same range again.
		to, more = t, true
		for i, m := range msgs {
			if m.Seq > t {
				msgs = msgs[:i]
				break
			}
		}
	}
	msgs = distill.CapInput(msgs, distill.MaxInputChars)
	cands, err := e.Entries(ctx, observer.EntryFilter{
		Scopes:   []string{p.Stream, observer.GlobalStream},
		Statuses: []string{payload.StatusActive, payload.StatusConflict},
	})
	if err != nil {
		return req, false, err
	}
	related := make([]distill.Entry, len(cands))
	for i, c := range cands {
		related[i] = c.Distill()
	}
	return distill.Request{
		Stream: p.Stream, Session: p.Session, From: p.From, To: to,
		Messages: msgs, Related: distill.SelectRelated(msgs, related),
	}, more, nil
}

func hasUserText(msgs []distill.Message) bool {
	for _, m := range msgs {
		if m.Role == distill.RoleUser && !m.Injected {
			return true
		}
	}
	return false
}

// ownScope keeps every op inside the request's stream: the projector
// applies an op only to entries of the event's own stream (so that folds
// of different streams commute), and related entries include global
// ones. An op aimed at another scope's entry becomes an add of the same
// content in this stream (the other entry is left as it is); a forget of
// one is rejected.
func ownScope(req distill.Request, ops []distill.Op, rejected []distill.Rejected) ([]distill.Op, []distill.Rejected) {
	scope := make(map[string]string, len(req.Related))
	for _, e := range req.Related {
		scope[e.ID] = e.Scope
	}
	out := ops[:0]
	for _, o := range ops {
		s, ok := scope[o.TargetID]
		if o.TargetID == "" || !ok || s == req.Stream {
			out = append(out, o)
			continue
		}
		if o.Op == payload.OpForget {
			rejected = append(rejected, distill.Rejected{Op: o, Why: fmt.Sprintf(
				"target %s belongs to %s, not %s: forget it with 'dshmem forget %s'", o.TargetID, s, req.Stream, o.TargetID)})
			continue
		}
		o.Reason = joinReason(o.Reason, fmt.Sprintf("%s of %s (in %s) made an add: an op changes only entries of its own stream", o.Op, o.TargetID, s))
		o.Op, o.TargetID, o.OldQuote = payload.OpAdd, "", ""
		out = append(out, o)
	}
	return out, rejected
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// opsEventLine encodes a memory/ops event (payload.Ops with ops;
// projector/ops.go folds it) of stream under id as an intake line. Ops
// that would push the event past MaxEventBytes are moved, from the last,
// to rejected.
func opsEventLine(stream, id string, data payload.Ops, ops []distill.Op, rejected []distill.Rejected, now time.Time) ([]byte, []distill.Op, []distill.Rejected, error) {
	for {
		data.Ops = ops
		if data.Ops == nil {
			data.Ops = []payload.Op{} // intake refuses a memory/ops without an ops array
		}
		raw, err := payload.Marshal(data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("checkpoint %s: %w", data.Checkpoint, err)
		}
		env := events.Envelope{
			V: events.CurrentVersion, Stream: stream, ID: id,
			Type: events.TypeMemoryOps, Time: observer.EventTime(now), Data: raw,
		}
		line, err := events.Marshal(&env)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("encode memory/ops: %w", err)
		}
		if len(line) <= observer.MaxEventBytes || len(ops) == 0 {
			return line, ops, rejected, nil
		}
		last := ops[len(ops)-1]
		ops = ops[:len(ops)-1]
		rejected = append(rejected, distill.Rejected{Op: last, Why: fmt.Sprintf(
			"the memory/ops event would exceed the %d KiB event limit; the op is left for a later checkpoint of new text", observer.MaxEventBytes>>10)})
	}
}

// checkpointEventID is the idempotency key of the memory/ops event that
// claims a session's events from seq from on: "dshmem:checkpoint:", 16
// hex digits of sha256(session), ":" and from. A range is claimed from
// the end of the last claim, so two checkpoints that read the same claim
// write the same id, and intake keeps only the first. Part of the on-disk
// format; do not change.
func checkpointEventID(session string, from uint64) string {
	sum := sha256.Sum256([]byte(session))
	return "dshmem:checkpoint:" + hex.EncodeToString(sum[:8]) + ":" + strconv.FormatUint(from, 10)
}

// newCheckpointID returns "ck-" and 16 random hex digits: chosen by the
// writer and stored in the event, never recomputed by a fold.
func newCheckpointID() (string, error) {
	h, err := observer.RandomHex()
	if err != nil {
		return "", fmt.Errorf("checkpoint id: %w", err)
	}
	return "ck-" + h, nil
}
