package observer

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore/recall"
)

// KnowledgeDir is where the knowledge files of a root live
// (<root>/knowledge/<slug>.md); a recall whose query names one returns it.
const KnowledgeDir = "knowledge"

// Recall runs q over the root's index, with the root's knowledge
// directory for queries that name a file.
func (e *Engine) Recall(ctx context.Context, q recall.Query) (*recall.Result, error) {
	q.KnowledgeDir = filepath.Join(e.root, KnowledgeDir)
	if q.Dense == nil {
		q.Dense = e.denseOf()
	}
	return recall.Find(ctx, e.store, q)
}

// RecordShown appends one memory/shown event saying that the entries ids
// were shown to session (mode: recall, search, packet, …), so that later
// recalls in that session rank them down and rotate. The event goes to
// the stream of cwd (or of the session's cwd when cwd is ""). Nothing is
// recorded for no ids.
func (e *Engine) RecordShown(ctx context.Context, session, cwd, mode string, ids []string, at time.Time) error {
	if session == "" || len(ids) == 0 {
		return nil
	}
	if e.log == nil {
		return fmt.Errorf("record entries shown to %s: %w", session, ErrReadOnly)
	}
	// The writer picks the id (ARCHITECTURE §4): the session and the
	// query time make it unique per recall.
	line, err := ShownLine(session, cwd, mode, ids, at, at.UnixNano())
	if err != nil {
		return fmt.Errorf("record entries shown to %s: %w", session, err)
	}
	_, out, err := e.Ingest(ctx, [][]byte{line})
	if err != nil {
		return fmt.Errorf("record entries shown to %s: %w", session, err)
	}
	if len(out) == 1 && out[0].Error != nil {
		return fmt.Errorf("record entries shown to %s: %v", session, out[0].Error)
	}
	return nil
}

// ShownLine is the memory/shown envelope saying that the entries ids
// were shown to session at at, with the id "shown:<session>:<ns>" (ns
// chosen by the writer, ARCHITECTURE §4). Engine.RecordShown and the
// server's recordShown both write it.
func ShownLine(session, cwd, mode string, ids []string, at time.Time, ns int64) ([]byte, error) {
	data, err := payload.Marshal(payload.Shown{Entries: ids, Session: session, Mode: mode})
	if err != nil {
		return nil, err
	}
	env := events.Envelope{ID: "shown:" + session + ":" + strconv.FormatInt(ns, 10), Type: events.TypeMemoryShown,
		Time: at.UTC().Format(time.RFC3339Nano), Session: session, Cwd: cwd, Data: data}
	return events.Marshal(&env)
}
