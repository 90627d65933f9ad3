package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The rows of the evidence ops (issue 16; migration 00011): aliases and
// learned procedures. projector/evidence.go folds them; recall reads the
// aliases, the broker and the CLI the procedures.

// AliasRow is an aliases row: the user's short form of a longer name,
// learned in one scope.
type AliasRow struct {
	Scope     string   `json:"scope"`
	Alias     string   `json:"alias"`
	Expansion string   `json:"expansion"`
	Quote     string   `json:"quote"`
	EventID   string   `json:"eventId"`
	Evidence  []string `json:"evidence"`
	Seq       uint64   `json:"seq"`
	Time      string   `json:"time"`
}

// AliasKey is the case-folded, space-collapsed form aliases are keyed
// and matched by.
func AliasKey(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// InsertAlias records an alias unless its scope already holds the same
// pair (the first op that taught it stays).
func (t *FoldTx) InsertAlias(a *AliasRow) error {
	ev, _ := json.Marshal(nonNil(a.Evidence))
	if _, err := t.exec(`INSERT INTO aliases (scope, alias_key, expansion_key, alias, expansion, quote, event_id, evidence, seq, time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		a.Scope, AliasKey(a.Alias), AliasKey(a.Expansion), a.Alias, a.Expansion, a.Quote, a.EventID, string(ev),
		int64(a.Seq), a.Time); err != nil {
		return fmt.Errorf("insert alias %q of %s: %w", a.Alias, a.Scope, err)
	}
	return nil
}

// Aliases lists the aliases of scopes (nil: every scope), by scope, alias
// and expansion.
func (s *Store) Aliases(ctx context.Context, scopes []string) ([]AliasRow, error) {
	q := `SELECT scope, alias, expansion, quote, event_id, evidence, seq, time FROM aliases`
	var args []any
	if scopes != nil {
		if len(scopes) == 0 {
			return nil, nil
		}
		q += ` WHERE scope IN (?` + strings.Repeat(`, ?`, len(scopes)-1) + `)`
		for _, sc := range scopes {
			args = append(args, sc)
		}
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY scope, alias_key, expansion_key`, args...)
	if err != nil {
		return nil, fmt.Errorf("read aliases: %w", err)
	}
	defer rows.Close()
	var out []AliasRow
	for rows.Next() {
		var a AliasRow
		var ev string
		var seq int64
		if err := rows.Scan(&a.Scope, &a.Alias, &a.Expansion, &a.Quote, &a.EventID, &ev, &seq, &a.Time); err != nil {
			return nil, fmt.Errorf("read aliases: %w", err)
		}
		a.Seq = uint64(seq)
		_ = json.Unmarshal([]byte(ev), &a.Evidence)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read aliases: %w", err)
	}
	return out, nil
}

// ProcedureRow is a procedures row; State is the payload.Procedure of
// its last op as JSON.
type ProcedureRow struct {
	ID         string `json:"id"`
	Scope      string `json:"scope"`
	Stage      string `json:"stage"`
	Trigger    string `json:"trigger"`
	State      string `json:"state"`
	Version    int64  `json:"version"`
	CreatedSeq uint64 `json:"createdSeq"`
	UpdatedSeq uint64 `json:"updatedSeq"`
	UpdatedAt  string `json:"updatedAt"`
}

// ProcedureVersion is a procedure_versions row: one stage change.
type ProcedureVersion struct {
	ProcedureID string   `json:"procedureId"`
	Version     int64    `json:"version"`
	Stream      string   `json:"stream"`
	Seq         uint64   `json:"seq"`
	EventID     string   `json:"eventId"`
	Time        string   `json:"time"`
	Stage       string   `json:"stage"`
	Reason      string   `json:"reason"`
	Evidence    []string `json:"evidence"`
	State       string   `json:"state"`
}

// LoadProcedure reads procedure id; ok is false when there is none.
func (t *FoldTx) LoadProcedure(id string) (p ProcedureRow, ok bool, err error) {
	p, err = scanProcedure(t.tx.QueryRow(`SELECT `+procedureColumns+` FROM procedures WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ProcedureRow{}, false, nil
	}
	if err != nil {
		return ProcedureRow{}, false, fmt.Errorf("read procedure %s: %w", id, err)
	}
	return p, true, nil
}

// PutProcedure writes p (its version already bumped) and its version row v.
func (t *FoldTx) PutProcedure(p *ProcedureRow, v *ProcedureVersion) error {
	if _, err := t.exec(`INSERT INTO procedures (id, scope, stage, trigger, state, version, created_seq, updated_seq, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET stage = excluded.stage, trigger = excluded.trigger, state = excluded.state,
			version = excluded.version, updated_seq = excluded.updated_seq, updated_at = excluded.updated_at`,
		p.ID, p.Scope, p.Stage, p.Trigger, p.State, p.Version, int64(p.CreatedSeq), int64(p.UpdatedSeq), p.UpdatedAt); err != nil {
		return fmt.Errorf("write procedure %s: %w", p.ID, err)
	}
	ev, _ := json.Marshal(nonNil(v.Evidence))
	if _, err := t.exec(`INSERT INTO procedure_versions (procedure_id, version, stream, seq, event_id, time, stage, reason, evidence, state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ProcedureID, v.Version, v.Stream, int64(v.Seq), v.EventID, v.Time, v.Stage, v.Reason, string(ev), v.State); err != nil {
		return fmt.Errorf("write version %d of procedure %s: %w", v.Version, v.ProcedureID, err)
	}
	return nil
}

const procedureColumns = `id, scope, stage, trigger, state, version, created_seq, updated_seq, updated_at`

func scanProcedure(r interface{ Scan(...any) error }) (ProcedureRow, error) {
	var p ProcedureRow
	var cs, us int64
	err := r.Scan(&p.ID, &p.Scope, &p.Stage, &p.Trigger, &p.State, &p.Version, &cs, &us, &p.UpdatedAt)
	p.CreatedSeq, p.UpdatedSeq = uint64(cs), uint64(us)
	return p, err
}

// Procedures lists the procedures of scope in the given stages (none:
// every stage), by id.
func (s *Store) Procedures(ctx context.Context, scope string, stages ...string) ([]ProcedureRow, error) {
	q := `SELECT ` + procedureColumns + ` FROM procedures WHERE scope = ?`
	args := []any{scope}
	if len(stages) > 0 {
		q += ` AND stage IN (?` + strings.Repeat(`, ?`, len(stages)-1) + `)`
		for _, st := range stages {
			args = append(args, st)
		}
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("read procedures of %s: %w", scope, err)
	}
	defer rows.Close()
	var out []ProcedureRow
	for rows.Next() {
		p, err := scanProcedure(rows)
		if err != nil {
			return nil, fmt.Errorf("read procedures of %s: %w", scope, err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read procedures of %s: %w", scope, err)
	}
	return out, nil
}

// Procedure returns procedure id; ok is false when the index holds none.
func (s *Store) Procedure(ctx context.Context, id string) (p ProcedureRow, ok bool, err error) {
	p, err = scanProcedure(s.db.QueryRowContext(ctx, `SELECT `+procedureColumns+` FROM procedures WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ProcedureRow{}, false, nil
	}
	if err != nil {
		return ProcedureRow{}, false, fmt.Errorf("read procedure %s: %w", id, err)
	}
	return p, true, nil
}

// ProcedureHistory returns every stage change of procedure id, oldest
// first.
func (s *Store) ProcedureHistory(ctx context.Context, id string) ([]ProcedureVersion, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT procedure_id, version, stream, seq, event_id, time, stage, reason, evidence, state
		FROM procedure_versions WHERE procedure_id = ? ORDER BY version`, id)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", id, err)
	}
	defer rows.Close()
	var out []ProcedureVersion
	for rows.Next() {
		var v ProcedureVersion
		var seq int64
		var ev string
		if err := rows.Scan(&v.ProcedureID, &v.Version, &v.Stream, &seq, &v.EventID, &v.Time, &v.Stage, &v.Reason, &ev, &v.State); err != nil {
			return nil, fmt.Errorf("read history of %s: %w", id, err)
		}
		v.Seq = uint64(seq)
		_ = json.Unmarshal([]byte(ev), &v.Evidence)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read history of %s: %w", id, err)
	}
	return out, nil
}

// ShownElsewhereBefore returns which of ids a memory/shown event of
// stream named before seq in a session other than session: an entry
// reused across sessions.
func (s *Store) ShownElsewhereBefore(ctx context.Context, stream, session string, seq uint64, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{stream, int64(seq), session}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT j.value FROM events e, json_each(e.data -> 'entries') j
		WHERE e.stream = ? AND e.type = 'memory/shown' AND e.seq < ? AND json_valid(e.data)
		  AND coalesce(nullif(e.data ->> 'session', ''), e.session) <> ?
		  AND j.value IN (?`+strings.Repeat(`, ?`, len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read earlier showings in %s: %w", stream, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read earlier showings in %s: %w", stream, err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

// ShownElsewhereBeforeAnyStream returns which of ids a memory/shown
// event of a session other than session named before the showing at seq
// and time in stream: in stream, before seq; in another stream, at an
// earlier event time (seqs are per stream). A global entry is shown in
// the sessions of every workspace, so its reuse counts across them.
func (s *Store) ShownElsewhereBeforeAnyStream(ctx context.Context, stream, session string, seq uint64, time string, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{session, stream, int64(seq), time}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT j.value FROM events e, json_each(e.data -> 'entries') j
		WHERE e.type = 'memory/shown' AND json_valid(e.data)
		  AND coalesce(nullif(e.data ->> 'session', ''), e.session) <> ?1
		  AND ((e.stream = ?2 AND e.seq < ?3) OR (e.stream <> ?2 AND julianday(e.time) < julianday(?4)))
		  AND j.value IN (?5`+strings.Repeat(`, ?`, len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read earlier showings of %d entries: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read earlier showings: %w", err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
