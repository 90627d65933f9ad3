package observer

import (
	"context"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// The fold side of intake: calls fold in the order they appended, and
// the calls ready at a time fold together in one transaction.

// foldSlot is one call's events waiting for their turn to fold.
type foldSlot struct {
	evs  []events.Envelope
	done bool
	err  error
	made map[string]sqlstore.Entry // the entries the fold's remembers made (projector.FoldMade)
}

// maxJoinedFold caps the events of calls folded together in one
// transaction.
const maxJoinedFold = projector.DefaultChunkSize

// foldInTurn folds evs after the events of every earlier ticket, takes
// them out of the pending sets and passes the turn on. The caller whose
// turn it is folds its events together with those of every later call
// already waiting (one transaction for all: the index's group commit),
// and the others return with its result. The events are durable before
// this runs: an index failure here is repaired by the catch-up on the
// next open.
func (e *Engine) foldInTurn(ctx context.Context, ticket uint64, evs []events.Envelope) (map[string]sqlstore.Entry, error) {
	e.foldMu.Lock()
	defer e.foldMu.Unlock()
	me := &foldSlot{evs: evs}
	e.foldSlots[ticket] = me
	for !me.done {
		if e.folding || e.foldSlots[e.foldTurn] == nil || e.gather() {
			e.foldCond.Wait()
			continue
		}
		// Take the run of ready calls from the turn on.
		var run []*foldSlot
		var all []events.Envelope
		for t := e.foldTurn; e.foldSlots[t] != nil && (len(run) == 0 || len(all)+len(e.foldSlots[t].evs) <= maxJoinedFold); t++ {
			sl := e.foldSlots[t]
			delete(e.foldSlots, t)
			run = append(run, sl)
			all = append(all, sl.evs...)
		}
		e.folding = true
		if e.gatherTimer != nil {
			e.gatherTimer.Stop()
		}
		e.gatherTimer = nil
		e.foldMu.Unlock()
		made, err := e.foldEvents(ctx, all)
		e.foldMu.Lock()
		for _, sl := range run {
			sl.done, sl.err, sl.made = true, err, made
		}
		e.foldTurn += uint64(len(run))
		e.folding = false
		e.foldCond.Broadcast()
	}
	return me.made, me.err
}

// foldGather is how long the caller whose turn has come waits at most
// for the calls that took their tickets before it, so they join its
// fold (gather). A var for tests.
var foldGather = 2 * time.Millisecond

// gather reports whether the caller whose turn it is should wait for
// more calls to join its fold, under foldMu. The calls that took their
// ticket before the turn came and are not ready yet wait for an fsync in
// flight (their group's, or the one after): folding them together pays
// one commit, one FTS5 segment and one summary placement for all, where
// folding alone pays each once per call — under load, the CPU a commit
// costs is what limits the rate. A lone caller never waits, and nobody
// waits longer than foldGather.
func (e *Engine) gather() bool {
	if foldGather <= 0 || e.gatherTimer != nil && !time.Now().Before(e.gatherUntil) {
		return false
	}
	end := e.foldTurn
	for e.foldSlots[end] != nil && end-e.foldTurn < maxGathered {
		end++
	}
	if e.gatherTimer == nil {
		e.gatherTarget = min(e.nextTicket, e.foldTurn+maxGathered)
		if end >= e.gatherTarget {
			return false
		}
		// The timer only wakes the waiters, which compare the clock with
		// gatherUntil: a timer of an earlier turn that fires late (Stop
		// does not stop a callback already running) ends nothing.
		e.gatherUntil = time.Now().Add(foldGather)
		e.gatherTimer = time.AfterFunc(foldGather, func() {
			e.foldMu.Lock()
			e.foldCond.Broadcast()
			e.foldMu.Unlock()
		})
		return true
	}
	return end < e.gatherTarget
}

// maxGathered caps the calls a fold waits for (gather).
const maxGathered = 64

// foldEvents folds evs and, once they are in the index, takes them out
// of the pending sets. After a failed fold (a full disk, an I/O error)
// the index is behind the log, whose events are safe: the next call
// first catches the index up with the whole log, its own events
// included, so a server recovers once the cause is gone instead of
// refusing every later fold with a gap until it is restarted. (Events
// of a failed fold stay in the pending sets, where dedupe finds them,
// until the catch-up has put them in the index.)
func (e *Engine) foldEvents(ctx context.Context, evs []events.Envelope) (map[string]sqlstore.Entry, error) {
	// A call with nothing to fold (all duplicates) still catches a
	// behind index up: a remember sent again after its fold failed
	// looks for the entry its first attempt made.
	if len(evs) == 0 && !e.foldBehind {
		return nil, nil
	}
	ctx = context.WithoutCancel(ctx)
	var err error
	var made map[string]sqlstore.Entry
	if e.foldBehind {
		err = e.proj.CatchUp(ctx, e.log, nil)
	} else {
		made, err = e.proj.FoldMade(ctx, evs)
	}
	e.foldBehind = err != nil
	if err != nil {
		// Kept until a catch-up has folded them, then taken out of the
		// pending sets with the events of the call that caught up.
		e.unfolded = append(e.unfolded, evs...)
		return nil, err
	}
	e.pendMu.Lock()
	for _, list := range [][]events.Envelope{e.unfolded, evs} {
		for _, ev := range list {
			delete(e.pendingIDs[ev.Stream], ev.ID)
			if c, ok := e.pendingCwd[ev.Session]; ok && c == ev.Cwd {
				delete(e.pendingCwd, ev.Session)
			}
		}
	}
	e.pendMu.Unlock()
	e.unfolded = nil
	return made, nil
}

// lockSettled takes the intake mutex and waits until every appended
// event is folded, for readers that need the index to equal the log
// (a checkpoint's claim, sync's rewrite).
func (e *Engine) lockSettled() {
	e.mu.Lock()
	e.foldMu.Lock()
	for e.foldTurn != e.nextTicket {
		e.foldCond.Wait()
	}
	e.foldMu.Unlock()
}
