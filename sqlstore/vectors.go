package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
)

// Kinds of text a vector is made from (the vectors table's kind).
const (
	VectorEntry   = "entry"
	VectorEpisode = "episode"
)

// VectorText is a text the encoder has yet to encode: an active or
// conflict entry with no vector of its current version, or an episode
// past vector_state.episodes_upto. N is its corpus rowid (entries.n or
// events.n).
type VectorText struct {
	Kind    string
	N       int64
	Stream  string
	Seq     uint64 // episodes
	Entry   string // entries
	Version int    // entries
	Text    string
}

// Vector is one row of the vectors table. Code nil: the text was looked
// at and is not English (entries only; an episode without a vector has no
// row).
type Vector struct {
	Kind, Stream        string
	Seq                 uint64
	Entry               string
	Version             int
	Model, ModelVersion string
	Scale               float32
	Code                []int8
}

// PendingEntryVectors returns at most limit active or conflict entries
// whose vector of model version mv is missing or of an older version of
// the entry, oldest first. The text is what recall scores: the content,
// with the title before it when the content does not start with it.
func (s *Store) PendingEntryVectors(ctx context.Context, mv string, limit int) ([]VectorText, error) {
	rows, err := s.query(ctx, `SELECT e.n, e.scope, e.id, e.version,
			CASE WHEN e.title = '' OR substr(e.content, 1, length(e.title)) = e.title THEN e.content
			     ELSE e.title || char(10) || e.content END
		FROM entries e LEFT JOIN vectors v ON v.kind = 'entry' AND v.entry = e.id
		WHERE e.status IN ('active', 'conflict')
		  AND (v.id IS NULL OR v.version != e.version OR v.model_version != ?1)
		ORDER BY e.n LIMIT ?2`, mv, limit)
	if err != nil {
		return nil, fmt.Errorf("list entries without vectors: %w", err)
	}
	defer rows.Close()
	var out []VectorText
	for rows.Next() {
		t := VectorText{Kind: VectorEntry}
		if err := rows.Scan(&t.N, &t.Stream, &t.Entry, &t.Version, &t.Text); err != nil {
			return nil, fmt.Errorf("list entries without vectors: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// PendingEpisodeVectors returns at most limit observed (not injected)
// episodes past vector_state.episodes_upto, in rowid order, with upto,
// the cursor they were read from.
func (s *Store) PendingEpisodeVectors(ctx context.Context, limit int) (out []VectorText, upto int64, err error) {
	if err := s.queryRow(ctx, `SELECT episodes_upto FROM vector_state WHERE id = 1`).Scan(&upto); err != nil {
		return nil, 0, fmt.Errorf("read vector state: %w", err)
	}
	rows, err := s.query(ctx, `SELECT e.n, e.stream, e.seq, ep.injected,
			CASE e.type
				WHEN 'task/end' THEN trim(coalesce(e.data ->> 'request', '') || char(10) ||
				                          coalesce(e.data ->> 'result', ''), char(10))
				ELSE coalesce(e.data ->> 'text', '')
			END
		FROM episodes ep JOIN events e ON e.n = ep.n
		WHERE ep.n > ?1 ORDER BY ep.n LIMIT ?2`, upto, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list episodes without vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		t := VectorText{Kind: VectorEpisode}
		var seq int64
		var injected bool
		if err := rows.Scan(&t.N, &t.Stream, &seq, &injected, &t.Text); err != nil {
			return nil, 0, fmt.Errorf("list episodes without vectors: %w", err)
		}
		t.Seq = uint64(seq)
		if injected {
			t.Text = "" // echoes of memory get no vector; the row still moves the cursor
		}
		out = append(out, t)
	}
	return out, upto, rows.Err()
}

// PutVectors stores vs in one transaction, replacing the row of the same
// text, and, when episodesUpto > 0, moves the episode cursor to it. The
// cursor moves only forward from from (what PendingEpisodeVectors
// returned): a purge that lowered it meanwhile wins. Nothing is stored
// when the index is no longer the one of epoch (a scrub replaced it
// while the texts were encoded), and no row is stored for a text that
// changed meanwhile: an episode purged, an entry revised, forgotten or
// superseded.
func (s *Store) PutVectors(ctx context.Context, epoch string, vs []Vector, from, episodesUpto int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		var now string
		if err := tx.QueryRowContext(ctx, `SELECT epoch FROM vector_state WHERE id = 1`).Scan(&now); err != nil {
			return err
		}
		if now != epoch {
			return nil
		}
		del, err := tx.PrepareContext(ctx, `DELETE FROM vectors WHERE kind = ?1 AND stream = ?2 AND seq = ?3 AND entry = ?4`)
		if err != nil {
			return err
		}
		defer del.Close()
		exists, err := tx.PrepareContext(ctx, `SELECT CASE ?1 WHEN 'episode' THEN EXISTS (SELECT 1 FROM events WHERE stream = ?2 AND seq = ?3)
			ELSE EXISTS (SELECT 1 FROM entries WHERE id = ?4 AND version = ?5 AND status IN ('active', 'conflict')) END`)
		if err != nil {
			return err
		}
		defer exists.Close()
		ins, err := tx.PrepareContext(ctx, `INSERT INTO vectors (kind, stream, seq, entry, version, model, model_version, scale, code)
				VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		for _, v := range vs {
			if _, err := del.ExecContext(ctx, v.Kind, v.Stream, int64(v.Seq), v.Entry); err != nil {
				return err
			}
			var code any
			var scale any
			if v.Code != nil {
				b := make([]byte, len(v.Code))
				for i, c := range v.Code {
					b[i] = byte(c)
				}
				code, scale = b, float64(v.Scale)
			}
			var ok bool
			if err := exists.QueryRowContext(ctx, v.Kind, v.Stream, int64(v.Seq), v.Entry, v.Version).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				continue
			}
			if _, err := ins.ExecContext(ctx, v.Kind, v.Stream, int64(v.Seq), v.Entry, v.Version, v.Model, v.ModelVersion, scale, code); err != nil {
				return err
			}
		}
		if episodesUpto > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE vector_state SET episodes_upto = ?2 WHERE id = 1 AND episodes_upto = ?1`,
				from, episodesUpto); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store vectors: %w", err)
	}
	return nil
}

// DropStaleVectors deletes the vectors of entries that are gone or no
// longer active or conflict (forgotten, superseded: their text never
// reaches recall again, and a scrub is to erase it), and of every model
// version but mv. It reports how many rows went.
func (s *Store) DropStaleVectors(ctx context.Context, mv string) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM vectors WHERE kind = 'entry' AND entry NOT IN
				(SELECT id FROM entries WHERE status IN ('active', 'conflict'))`,
			`DELETE FROM vectors WHERE model_version != ?1`,
		} {
			r, err := tx.ExecContext(ctx, q, mv)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			n += k
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("drop stale vectors: %w", err)
	}
	return n, nil
}

// VectorState names the state of the vectors table: the index file's
// epoch, the count of deletes of each kind (Gen) and the greatest row id.
// A cache of the vectors of a kind that saw the same epoch and gen and
// a lower Max misses only the rows added since, above its Max.
type VectorState struct {
	Epoch                string
	EntryGen, EpisodeGen int64
	Max                  int64
}

// VectorState reads the vectors table's state (one row and one seek).
// Its Epoch is what PutVectors checks.
func (s *Store) VectorState(ctx context.Context) (VectorState, error) {
	var st VectorState
	if err := s.queryRow(ctx, `SELECT epoch, entry_gen, episode_gen, (SELECT coalesce(max(id), 0) FROM vectors)
		FROM vector_state WHERE id = 1`).Scan(&st.Epoch, &st.EntryGen, &st.EpisodeGen, &st.Max); err != nil {
		return VectorState{}, fmt.Errorf("read vector state: %w", err)
	}
	return st, nil
}

// StoredVector is a vector as a scan loads it: its row id, the corpus
// rowid of its text (entries.n or events.n), its stream, and its code.
type StoredVector struct {
	ID, N  int64
	Stream string
	Scale  float32 // VectorCodes only: a load needs the signs alone
	Code   []byte
}

// LoadVectors calls fn for every vector of kind and model version mv with
// a row id above after, in streams (nil: every stream), in no order. It
// reads no scale (the scan needs only the signs of the code), and Code
// is valid only during the call.
func (s *Store) LoadVectors(ctx context.Context, kind, mv string, after int64, streams []string, fn func(StoredVector)) error {
	q := `SELECT v.id, e.n, v.stream, v.code FROM vectors v JOIN entries e ON e.id = v.entry
		WHERE v.kind = 'entry' AND v.id > ?1 AND v.model_version = ?2 AND v.code IS NOT NULL`
	if kind == VectorEpisode {
		q = `SELECT v.id, e.n, v.stream, v.code FROM vectors v JOIN events e ON e.stream = v.stream AND e.seq = v.seq
		WHERE v.kind = 'episode' AND v.id > ?1 AND v.model_version = ?2 AND v.code IS NOT NULL`
	}
	args := []any{after, mv}
	if sc := InScopes(streams); sc.scoped {
		// The unique (kind, stream, …) index finds the streams' rows.
		q += ` AND v.stream IN (SELECT value FROM json_each(?3))`
		args = append(args, sc.list)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("load vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v StoredVector
		var code sql.RawBytes // not copied again: fn copies what it keeps
		if err := rows.Scan(&v.ID, &v.N, &v.Stream, &code); err != nil {
			return fmt.Errorf("load vectors: %w", err)
		}
		v.Code = code
		fn(v)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load vectors: %w", err)
	}
	return nil
}

// CountVectors returns how many rows of kind the vectors table holds in
// streams (nil: every stream): what a LoadVectors from 0 reads at most
// (it also counts the rows of texts found not English). It reads the
// unique (kind, stream, …) index only, not the codes: about 6 ms per
// 100k rows counted.
func (s *Store) CountVectors(ctx context.Context, kind string, streams []string) (int64, error) {
	q, args := `SELECT count(*) FROM vectors WHERE kind = ?1`, []any{kind}
	if sc := InScopes(streams); sc.scoped {
		q += ` AND stream IN (SELECT value FROM json_each(?2))`
		args = append(args, sc.list)
	}
	var n int64
	err := s.queryRow(ctx, q, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count vectors: %w", err)
	}
	return n, nil
}

// VectorCodes returns the scale and code of the vectors of the row ids
// given (those still there), for re-ranking the scan's best.
func (s *Store) VectorCodes(ctx context.Context, ids []int64) (map[int64]StoredVector, error) {
	arr, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, `SELECT v.id, v.scale, v.code FROM json_each(?1) j JOIN vectors v ON v.id = j.value
		WHERE v.code IS NOT NULL`, string(arr))
	if err != nil {
		return nil, fmt.Errorf("read vectors: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]StoredVector, len(ids))
	for rows.Next() {
		var v StoredVector
		var scale float64
		if err := rows.Scan(&v.ID, &scale, &v.Code); err != nil {
			return nil, fmt.Errorf("read vectors: %w", err)
		}
		v.Scale = float32(scale)
		out[v.ID] = v
	}
	return out, rows.Err()
}

// VectorCounts returns how many vectors of each kind the index holds
// (rows with a code) and how many entries were found not English.
func (s *Store) VectorCounts(ctx context.Context) (entries, episodes, notEnglish int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT
			coalesce(sum(kind = 'entry' AND code IS NOT NULL), 0),
			coalesce(sum(kind = 'episode' AND code IS NOT NULL), 0),
			coalesce(sum(code IS NULL), 0) FROM vectors`).Scan(&entries, &episodes, &notEnglish)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("count vectors: %w", err)
	}
	return entries, episodes, notEnglish, nil
}

// DumpVectors writes the vectors table in Dump's form (the code in hex),
// without local row ids: two indexes whose vectors were made from the
// same texts by the same deterministic encoder dump to the same bytes.
func (s *Store) DumpVectors(ctx context.Context, w io.Writer) error {
	return s.dumpTo(ctx, w, []dumpTable{{"vectors", `SELECT kind, stream, seq, entry, version, model, model_version, scale, hex(code)
		FROM vectors ORDER BY kind, stream, seq, entry`}})
}
