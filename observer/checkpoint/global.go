package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/distill"
)

// Global evidence. A global entry is shown in the sessions of every
// workspace, but an op changes only entries of its own stream (so that
// folds of different streams commute). The confidence ops a workspace
// session's evidence makes for global entries are therefore committed as
// a memory/ops event of the global stream, before the checkpoint's own
// event in the session's stream:
//
//   - its id is globalEventID(stream, session, from), from the claim, as
//     the checkpoint's own id is, and intake keeps the first event of an
//     id ("dshmem:" ids: a retry is a duplicate), so a claim's global
//     evidence is appended once however often its commit is tried;
//   - its data has the checkpoint id and the claimed range (from, to) but
//     no session, so it is no claim of the global stream (claims name
//     their session), and evidence ids are qualified with the session's
//     stream (evidenceRef);
//   - the two events are in two streams, two logs, and no intake call
//     makes two logs durable together. So the global one is appended
//     (and synced) first. A crash before it leaves nothing; after both,
//     all. After it and before the checkpoint's own event, the range is
//     still pending; the next checkpoint claims it again from the same
//     from, and claimSettled cuts the claim at the global event's to, so
//     the retry judges exactly the same range: its global event is the
//     same id and a duplicate, its own event lands, and no evidence is
//     counted twice or lost.
//   - commits are serialised (commitMu) and check, before writing, that
//     no other checkpoint committed the claim since it was read, so two
//     checkpoints racing for a claim commit it once, ranges matching.

// afterGlobalCommit, when set (by a test), runs after a checkpoint's
// global evidence is committed and before its own event is: a crash
// point.
var afterGlobalCommit func()

// globalEventID is the id of the global stream's memory/ops event that
// holds the global evidence of the claim of a session of stream from seq
// from on: "dshmem:evidence:", 16 hex digits of sha256(stream, NUL,
// session), ":" and from. Part of the on-disk format; do not change.
func globalEventID(stream, session string, from uint64) string {
	sum := sha256.Sum256([]byte(stream + "\x00" + session))
	return "dshmem:evidence:" + hex.EncodeToString(sum[:8]) + ":" + strconv.FormatUint(from, 10)
}

// globalClaim returns the end of the range whose global evidence the
// global stream holds for the claim of session of stream from from on,
// and whether it holds any.
func (e engine) globalClaim(ctx context.Context, stream, session string, from uint64) (uint64, bool, error) {
	if stream == observer.GlobalStream || session == "" {
		return 0, false, nil
	}
	id := globalEventID(stream, session, from)
	held, err := e.Store().ExistingEvents(ctx, observer.GlobalStream, []string{id})
	if err != nil {
		return 0, false, fmt.Errorf("read the global evidence of session %s: %w", session, err)
	}
	ev, ok := held[id]
	if !ok {
		return 0, false, nil
	}
	var d payload.Ops
	if payload.Unmarshal([]byte(ev.Data), &d) != nil {
		return 0, false, nil
	}
	return d.To, true, nil
}

// commitMu serialises the commits of checkpoints (the global evidence
// and the checkpoint's own event), so that between a claim's check and
// its commit no other checkpoint of this process commits.
var commitMu sync.Mutex

// commitGlobal appends the global evidence ops of req's claim, under
// commitMu. ok says that the checkpoint's own event may follow: the
// global stream holds this range's evidence (appended now or by an
// earlier commit of the claim that stopped before its own event), or
// there is none. When it is false res says Duplicate: another checkpoint
// committed the claim, or an earlier commit's range ends before req's
// (the next claim is cut at its end: claimSettled).
func (e engine) commitGlobal(ctx context.Context, res *Result, req distill.Request, ck string, ops []distill.Op, now time.Time) (ok bool, err error) {
	if req.Stream == observer.GlobalStream {
		return true, nil
	}
	claimed, err := e.claimedTo(ctx, req.Stream, req.Session)
	if err != nil {
		return false, err
	}
	if claimed >= req.From {
		// A checkpoint of this process committed the claim since it was
		// read; without this check its global evidence could be written
		// again for a longer range.
		res.Duplicate, res.Ops = true, nil
		return false, nil
	}
	to, held, err := e.globalClaim(ctx, req.Stream, req.Session, req.From)
	if err != nil {
		return false, err
	}
	switch {
	case held && to < req.To:
		res.Duplicate, res.Ops = true, nil
		return false, nil
	case held:
		// The same range (or, only if the rules that cut claims changed
		// across a crash, a longer one: its evidence stands as written).
		return true, nil
	case len(ops) == 0:
		return true, nil
	}
	for _, d := range e.Quarantined() {
		if d.Stream == observer.GlobalStream {
			// A damaged global stream takes no event until it is
			// salvaged; the workspace's checkpoint is not held up for it.
			for _, o := range ops {
				res.Rejected = append(res.Rejected, distill.Rejected{Op: o, Why: "the global stream is quarantined " +
					"(run 'dshmem salvage global'): this evidence for a global entry is not recorded"})
			}
			return true, nil
		}
	}
	data := payload.Ops{Checkpoint: ck, From: req.From, To: req.To}
	line, ops, rejected, err := opsEventLine(observer.GlobalStream, globalEventID(req.Stream, req.Session, req.From), data, ops, nil, now)
	if err != nil {
		return false, err
	}
	res.Rejected = append(res.Rejected, rejected...)
	_, outs, err := e.Ingest(ctx, [][]byte{line})
	if err != nil {
		return false, fmt.Errorf("commit the global evidence of session %s: %w", req.Session, err)
	}
	switch o := outs[0]; o.Status {
	case observer.StatusRejected:
		return false, fmt.Errorf("commit the global evidence of session %s: the memory/ops event was refused: %v", req.Session, o.Error)
	case observer.StatusAppended:
		res.GlobalOps, res.GlobalSeq = ops, o.Seq
	}
	if afterGlobalCommit != nil {
		afterGlobalCommit() // a test's crash point
	}
	return true, nil
}
