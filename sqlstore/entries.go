package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Entry is one entries row (ARCHITECTURE §5). Its fields are those of
// observer.Entry, in the same order, so that one converts to the other.
type Entry struct {
	ID            string
	Scope         string
	Type          string
	Title         string
	Description   string
	Terms         string // ", "-separated
	Content       string
	Tags          []string // [] when the column holds none or no JSON array
	Importance    int
	Confidence    float64
	Status        string
	ConflictGroup string
	Supersedes    string
	SupersededBy  string
	Provenance    json.RawMessage // the column as written: {"eventIds":[…],"reason":…,"source":…,"checkpoint":…}
	CreatedAt     string
	UpdatedAt     string
	Version       int64
	CreatedSeq    uint64
	UpdatedSeq    uint64
}

// EntryVersion is one entry_versions row with the event that made it.
// Its fields are those of observer.EntryVersion, in the same order.
type EntryVersion struct {
	EntryID     string
	Version     int64
	Op          string // add | revise | supersede | conflict | forget | resolve
	Stream      string
	Seq         uint64
	EventID     string
	EventType   string // "" when the event is not in the index
	Checkpoint  string // data.checkpoint of a memory/ops event
	Time        string
	Type        string
	Title       string
	Description string
	Terms       string
	Content     string
	Tags        []string
	Importance  int
	Confidence  float64
	Status      string
	Reason      string
}

// EntryFilter selects entries; the zero value selects all of them. Its
// fields are those of observer.EntryFilter.
type EntryFilter struct {
	Scopes   []string // streams; empty: every stream
	Statuses []string // empty: every status
}

const entryColumns = `id, scope, type, title, description, terms, content, tags, importance, confidence, status,
	conflict_group, supersedes, superseded_by, provenance, created_at, updated_at, version, created_seq, updated_seq`

func scanEntry(sc interface{ Scan(...any) error }) (Entry, error) {
	var e Entry
	var tags, prov string
	err := sc.Scan(&e.ID, &e.Scope, &e.Type, &e.Title, &e.Description, &e.Terms, &e.Content, &tags,
		&e.Importance, &e.Confidence, &e.Status, &e.ConflictGroup, &e.Supersedes, &e.SupersededBy, &prov,
		&e.CreatedAt, &e.UpdatedAt, &e.Version, &e.CreatedSeq, &e.UpdatedSeq)
	if err != nil {
		return e, err
	}
	e.Tags = decodeTags(tags)
	e.Provenance = json.RawMessage(prov)
	return e, nil
}

// EntryOf is the entry the index holds after row was inserted by the
// event at seq and time (FoldTx.InsertEntry), as Store.Entry reads it.
func EntryOf(row *EntryRow, seq uint64, time string) Entry {
	return Entry{ID: row.ID, Scope: row.Scope, Type: row.Type, Title: row.Title, Description: row.Description,
		Terms: row.Terms, Content: row.Content, Tags: decodeTags(row.Tags), Importance: row.Importance,
		Confidence: row.Confidence, Status: row.Status, ConflictGroup: row.ConflictGroup, Supersedes: row.Supersedes,
		SupersededBy: row.SupersededBy, Provenance: json.RawMessage(row.Provenance), CreatedAt: time, UpdatedAt: time,
		Version: row.Version, CreatedSeq: seq, UpdatedSeq: seq}
}

// decodeTags reads a tags column; anything but a JSON array of strings
// is no tags.
func decodeTags(s string) []string {
	var tags []string
	if json.Unmarshal([]byte(s), &tags) != nil || tags == nil {
		return []string{}
	}
	return tags
}

// Entries lists the entries f selects, by scope and then in the order
// they were created.
func (s *Store) Entries(ctx context.Context, f EntryFilter) ([]Entry, error) {
	scopes, _ := json.Marshal(f.Scopes)
	statuses, _ := json.Marshal(f.Statuses)
	// Only the filters given are in the statement: an "?1 = 'null' OR"
	// guard would keep SQLite off the (scope, status) index, and one
	// scope's entries (the settings page) would scan every entry.
	where := "1"
	if f.Scopes != nil {
		where += " AND scope IN (SELECT value FROM json_each(?1))"
	}
	if f.Statuses != nil {
		where += " AND status IN (SELECT value FROM json_each(?2))"
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+entryColumns+` FROM entries
		WHERE `+where+`
		ORDER BY scope, created_seq, id`, string(scopes), string(statuses))
	if err != nil {
		return nil, fmt.Errorf("read entries: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		en, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("read entries: %w", err)
		}
		out = append(out, en)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read entries: %w", err)
	}
	return out, nil
}

const entryByIDSQL = `SELECT ` + entryColumns + ` FROM entries WHERE id = ?`

// Entry returns the entry with id, whatever its status; ok is false when
// the index holds none.
func (s *Store) Entry(ctx context.Context, id string) (e Entry, ok bool, err error) {
	e, err = scanEntry(s.preparedQueryRow(ctx, entryByIDSQL, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("read entry %s: %w", id, err)
	}
	return e, true, nil
}

// EntryHistory returns every version of entry id, oldest first, each
// with the event that made it (nil when the entry has none).
func (s *Store) EntryHistory(ctx context.Context, id string) ([]EntryVersion, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT v.entry_id, v.version, v.op, v.stream, v.seq, v.event_id,
			coalesce(ev.type, ''), coalesce(CASE WHEN json_valid(ev.data) THEN ev.data ->> 'checkpoint' END, ''),
			v.time, v.type, v.title, v.description, v.terms, v.content, v.tags, v.importance, v.confidence, v.status, v.reason
		FROM entry_versions v LEFT JOIN events ev ON ev.stream = v.stream AND ev.seq = v.seq
		WHERE v.entry_id = ? ORDER BY v.version`, id)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", id, err)
	}
	defer rows.Close()
	var out []EntryVersion
	for rows.Next() {
		var v EntryVersion
		var tags string
		if err := rows.Scan(&v.EntryID, &v.Version, &v.Op, &v.Stream, &v.Seq, &v.EventID, &v.EventType, &v.Checkpoint,
			&v.Time, &v.Type, &v.Title, &v.Description, &v.Terms, &v.Content, &tags, &v.Importance, &v.Confidence,
			&v.Status, &v.Reason); err != nil {
			return nil, fmt.Errorf("read history of %s: %w", id, err)
		}
		v.Tags = decodeTags(tags)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read history of %s: %w", id, err)
	}
	return out, nil
}

// EntryAddedBy returns the entry whose first version ("add") event
// eventID made; ok is false when it made none.
func (s *Store) EntryAddedBy(ctx context.Context, eventID string) (e Entry, ok bool, err error) {
	e, err = scanEntry(s.db.QueryRowContext(ctx, `SELECT `+entryColumns+` FROM entries WHERE id = (
		SELECT entry_id FROM entry_versions WHERE event_id = ? AND op = 'add' ORDER BY entry_id LIMIT 1)`, eventID))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("read the entry event %s added: %w", eventID, err)
	}
	return e, true, nil
}

// ReachableEntryIDs lists the ids of the entries of scope that ops can
// still reach (not forgotten), in id order.
func (s *Store) ReachableEntryIDs(ctx context.Context, scope string) ([]string, error) {
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT id FROM entries WHERE scope = ? AND status <> 'forgotten' ORDER BY id`, scope); err != nil {
		return nil, fmt.Errorf("read entries of %s: %w", scope, err)
	}
	return ids, nil
}

// MatchEntries returns the ids of the entries whose entries_fts row
// matches the FTS5 expression match (e.g. `body : "make"`), in id order.
// It shows what the index holds; recall ranks through Probe.
func (s *Store) MatchEntries(ctx context.Context, match string) ([]string, error) {
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT e.id FROM entries_fts f JOIN entries e ON e.n = f.rowid
		WHERE entries_fts MATCH ? ORDER BY e.id`, match); err != nil {
		return nil, fmt.Errorf("match entries %q: %w", match, err)
	}
	return ids, nil
}
