package projector

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

const maxTitleRunes = 160

// EntryID derives the id of the entry created by the pos-th item of the
// event at (stream, seq): "m-" and the first 16 hex digits of
// sha256("stream:seq:pos"). memory/remember creates one entry, pos 0;
// memory/ops numbers its add ops. Part of the on-disk format (ids appear
// in Markdown anchors and later events); do not change.
func EntryID(stream string, seq uint64, pos int) string {
	sum := sha256.Sum256([]byte(stream + ":" + strconv.FormatUint(seq, 10) + ":" + strconv.Itoa(pos)))
	return "m-" + hex.EncodeToString(sum[:8])
}

// entry is the state of one entries row, as written by an op.
type entry struct {
	n                  int64 // entries.n = entries_fts.rowid; set by loadEntry and addEntry
	id, scope, typ     string
	title, description string
	terms, content     string
	tags               []string
	importance         int
	confidence         float64
	status             string
	conflictGroup      string
	supersedes         string
	supersededBy       string
	prov               provenance
	version            int64
}

// Entry statuses: short names of payload's.
const (
	statusActive     = payload.StatusActive
	statusConflict   = payload.StatusConflict
	statusSuperseded = payload.StatusSuperseded
	statusForgotten  = payload.StatusForgotten
)

// decodeRemember reads a memory/remember event's data; ok is false when
// the event adds no entry (no content, or data that does not decode).
// Every other remember adds one active entry: the summary's history
// relies on that (fileTrack.plan).
func decodeRemember(ev *events.Envelope) (d payload.Remember, ok bool) {
	if payload.Unmarshal(ev.Data, &d) != nil {
		return d, false
	}
	return d, strings.TrimSpace(d.Content) != ""
}

// remember adds the entry a memory/remember event asks for. Data the
// intake should have refused (no content) records nothing rather than
// failing replay; values out of range are brought into it.
func (f *fold) remember(ev *events.Envelope) error {
	e, ok := rememberEntry(ev)
	if !ok {
		return nil
	}
	return f.addEntry(ev, &e, "add", "")
}

// rememberEntry is the entry a memory/remember event adds; ok is false
// when it adds none (decodeRemember).
func rememberEntry(ev *events.Envelope) (e entry, ok bool) {
	d, ok := decodeRemember(ev)
	if !ok {
		return entry{}, false
	}
	content := strings.TrimSpace(d.Content)
	e = entry{
		id:          EntryID(ev.Stream, ev.Seq, 0),
		scope:       ev.Stream,
		typ:         d.Type,
		title:       strings.TrimSpace(d.Title),
		description: strings.TrimSpace(d.Description),
		terms:       strings.TrimSpace(d.Terms),
		content:     content,
		tags:        cleanTags(d.Tags),
		confidence:  payload.DefaultConfidence,
		status:      statusActive,
		version:     1,
	}
	if !payload.KnownEntryType(e.typ) {
		e.typ = payload.DefaultEntryType
	}
	if e.title == "" {
		e.title = titleFrom(content)
	}
	e.importance = valueOr(d.Importance, payload.DefaultImportance)
	return e, true
}

// addEntry inserts a new entry, its first version (op names the op that
// made it) and its index row. e.prov without event ids gets the event's
// id.
func (f *fold) addEntry(ev *events.Envelope, e *entry, op, reason string) error {
	if len(e.prov.EventIDs) == 0 {
		e.prov.EventIDs = []string{ev.ID}
	}
	tags, _ := json.Marshal(e.tags)
	prov, _ := json.Marshal(e.prov)
	res, err := f.exec(`INSERT INTO entries (id, scope, type, title, description, terms, content, tags,
			importance, confidence, status, conflict_group, supersedes, superseded_by, provenance,
			created_at, updated_at, version, created_seq, updated_seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.id, e.scope, e.typ, e.title, e.description, e.terms, e.content, string(tags),
		e.importance, e.confidence, e.status, e.conflictGroup, e.supersedes, e.supersededBy, string(prov),
		ev.Time, ev.Time, e.version, int64(ev.Seq), int64(ev.Seq))
	if err != nil {
		return fmt.Errorf("insert entry %s: %w", e.id, err)
	}
	if e.n, err = res.LastInsertId(); err != nil {
		return fmt.Errorf("insert entry %s: %w", e.id, err)
	}
	if err := f.entryVersion(ev, e, op, reason); err != nil {
		return err
	}
	return f.indexEntry(e.n, e)
}

// updateEntry writes e, changed by an op of ev, as its next version: the
// row, a version row, and (when reindex is set because its text changed)
// its index row. The caller has made the change; updateEntry bumps the
// version.
func (f *fold) updateEntry(ev *events.Envelope, e *entry, op, reason string, reindex bool) error {
	e.version++
	tags, _ := json.Marshal(e.tags)
	prov, _ := json.Marshal(e.prov)
	if _, err := f.exec(`UPDATE entries SET type = ?, title = ?, description = ?, terms = ?, content = ?, tags = ?,
			importance = ?, confidence = ?, status = ?, conflict_group = ?, supersedes = ?, superseded_by = ?,
			provenance = ?, updated_at = ?, version = ?, updated_seq = ?
		WHERE id = ?`,
		e.typ, e.title, e.description, e.terms, e.content, string(tags),
		e.importance, e.confidence, e.status, e.conflictGroup, e.supersedes, e.supersededBy,
		string(prov), ev.Time, e.version, int64(ev.Seq), e.id); err != nil {
		return fmt.Errorf("update entry %s: %w", e.id, err)
	}
	if err := f.entryVersion(ev, e, op, reason); err != nil {
		return err
	}
	if !reindex {
		return nil
	}
	if _, err := f.exec(`DELETE FROM entries_fts WHERE rowid = ?`, e.n); err != nil {
		return fmt.Errorf("reindex entry %s: %w", e.id, err)
	}
	return f.indexEntry(e.n, e)
}

// indexEntry writes the entry's row in entries_fts. A later revise must
// delete the old row (DELETE FROM entries_fts WHERE rowid = n) first.
func (f *fold) indexEntry(n int64, e *entry) error {
	body := joinNonEmpty(e.description, e.terms, e.content)
	bigrams := tokenize.IndexText(joinNonEmpty(e.title, body, strings.Join(e.tags, " ")))
	if _, err := f.exec(`INSERT INTO entries_fts (rowid, title, body, bigrams) VALUES (?, ?, ?, ?)`,
		n, e.title, body, bigrams); err != nil {
		return fmt.Errorf("index entry %s: %w", e.id, err)
	}
	return nil
}

func (f *fold) entryVersion(ev *events.Envelope, e *entry, op, reason string) error {
	tags, _ := json.Marshal(e.tags)
	if _, err := f.exec(`INSERT INTO entry_versions (entry_id, version, stream, seq, event_id, op, time,
			type, title, description, terms, content, tags, importance, confidence, status, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.id, e.version, ev.Stream, int64(ev.Seq), ev.ID, op, ev.Time,
		e.typ, e.title, e.description, e.terms, e.content, string(tags), e.importance, e.confidence, e.status, reason); err != nil {
		return fmt.Errorf("insert version %d of entry %s: %w", e.version, e.id, err)
	}
	return nil
}

// forget hides an entry. Only entries of the event's own stream are
// touched: an op never reaches across streams, which is what lets folds
// of different streams commute. An unknown id, or an entry already
// forgotten, records nothing (replay must not fail on it).
func (f *fold) forget(ev *events.Envelope) error {
	var d payload.Forget
	if payload.Unmarshal(ev.Data, &d) != nil || d.EntryID == "" {
		return nil
	}
	e, err := f.loadEntry(d.EntryID, ev.Stream)
	if err != nil || e == nil || e.status == statusForgotten {
		return err
	}
	return f.forgetEntry(ev, e, d.Reason)
}

// forgetEntry marks e forgotten; when that leaves its conflict group with
// one contender, that one is resolved (resolveGroup).
func (f *fold) forgetEntry(ev *events.Envelope, e *entry, reason string) error {
	e.status = statusForgotten
	if err := f.updateEntry(ev, e, "forget", reason, false); err != nil {
		return fmt.Errorf("forget entry %s: %w", e.id, err)
	}
	return f.resolveGroup(ev, e.scope, e.conflictGroup)
}

// resolveGroup settles a conflict group that has lost members: when
// exactly one entry of scope is left in status conflict in group, there
// is nothing left for it to conflict with, so it becomes active again
// (out of the group, a version "resolve"). A group with two or more
// contenders left stays as it is. Members are read in id order, so the
// fold stays deterministic.
func (f *fold) resolveGroup(ev *events.Envelope, scope, group string) error {
	if group == "" {
		return nil
	}
	rows, err := f.tx.Query(`SELECT id FROM entries WHERE scope = ? AND conflict_group = ? AND status = ? ORDER BY id`,
		scope, group, statusConflict)
	if err != nil {
		return fmt.Errorf("read conflict group %s: %w", group, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("read conflict group %s: %w", group, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read conflict group %s: %w", group, err)
	}
	if len(ids) != 1 {
		return nil
	}
	e, err := f.loadEntry(ids[0], scope)
	if err != nil || e == nil {
		return err
	}
	e.status, e.conflictGroup = statusActive, ""
	return f.updateEntry(ev, e, "resolve", "conflict group "+group+" has no other contender left", false)
}

// loadEntry reads entry id of scope, or nil when there is none.
func (f *fold) loadEntry(id, scope string) (*entry, error) {
	var e entry
	var tags, prov string
	err := f.tx.QueryRow(`SELECT n, id, scope, type, title, description, terms, content, tags,
			importance, confidence, status, conflict_group, supersedes, superseded_by, provenance, version
		FROM entries WHERE id = ? AND scope = ?`, id, scope).
		Scan(&e.n, &e.id, &e.scope, &e.typ, &e.title, &e.description, &e.terms, &e.content, &tags,
			&e.importance, &e.confidence, &e.status, &e.conflictGroup, &e.supersedes, &e.supersededBy, &prov, &e.version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read entry %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(tags), &e.tags); err != nil {
		return nil, fmt.Errorf("read entry %s: tags: %w", id, err)
	}
	if err := json.Unmarshal([]byte(prov), &e.prov); err != nil {
		return nil, fmt.Errorf("read entry %s: provenance: %w", id, err)
	}
	return &e, nil
}

// provenance is an entry's provenance column: the events it rests on
// (the evidence messages, then the event that wrote it), why, and for
// entries made by memory/ops the op's provenance ("distiller",
// "hand-edit") and the checkpoint id. Part of the index format read by
// `dshmem entries --json`.
type provenance struct {
	EventIDs   []string `json:"eventIds"`
	Reason     string   `json:"reason,omitempty"`
	Source     string   `json:"source,omitempty"`
	Checkpoint string   `json:"checkpoint,omitempty"`
}

// titleFrom is the first non-blank line of content, cut to 160 runes.
func titleFrom(content string) string {
	line := content
	for l := range strings.Lines(content) {
		if t := strings.TrimSpace(l); t != "" {
			line = t
			break
		}
	}
	if utf8.RuneCountInString(line) <= maxTitleRunes {
		return line
	}
	i, n := 0, 0
	for i = range line {
		if n == maxTitleRunes {
			break
		}
		n++
	}
	return strings.TrimSpace(line[:i])
}

// cleanTags trims tags and drops empty and repeated ones, keeping order.
func cleanTags(tags []string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// valueOr is *p, or def when p is nil (not given).
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func joinNonEmpty(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}
