package importer

// The dsh-workspace-memory tree: memory_entries.json.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
)

// legacyEntry is one entry of memory_entries.json, decoded leniently:
// fields that the old plugin wrote in more than one shape are kept raw.
type legacyEntry struct {
	ID              json.RawMessage `json:"id"`
	Scope           string          `json:"scope"`
	Type            string          `json:"type"`
	Title           string          `json:"title"`
	Description     string          `json:"description"`
	RetrievalTerms  json.RawMessage `json:"retrievalTerms"` // array or string
	Content         string          `json:"content"`
	Tags            json.RawMessage `json:"tags"`       // array or comma-separated string
	Importance      json.RawMessage `json:"importance"` // number, numeric string or word
	Status          string          `json:"status"`
	ConflictGroupID json.RawMessage `json:"conflictGroupId"`
	Supersedes      json.RawMessage `json:"supersedes"`   // id or ids
	SupersededBy    json.RawMessage `json:"supersededBy"` // id or ids
	Revisions       json.RawMessage `json:"revisions"`
	Provenance      json.RawMessage `json:"provenance"`
	CreatedAt       json.RawMessage `json:"createdAt"` // RFC 3339, or ms (number or string)
	UpdatedAt       json.RawMessage `json:"updatedAt"`
}

// inactiveStatuses are legacy statuses whose entries are imported as
// remembered and then forgotten: kept for audit, never recalled.
var inactiveStatuses = map[string]bool{
	"superseded": true, "forgotten": true, "deleted": true, "archived": true,
	"inactive": true, "expired": true, "retracted": true,
}

// importanceWords maps the words some legacy entries carry onto 0–3.
var importanceWords = map[string]float64{
	"none": 0, "trivial": 0, "low": 0,
	"normal": 1, "medium": 1, "moderate": 1,
	"high": 2, "important": 2,
	"critical": 3, "urgent": 3, "highest": 3,
}

// decodeEntries accepts a JSON array of entries or an object holding
// them under "entries" (other keys of that object are ignored).
func decodeEntries(b []byte) ([]json.RawMessage, error) {
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err == nil {
		return arr, nil
	}
	var obj struct {
		Entries *[]json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("not a JSON array of entries or an object with \"entries\": %w", err)
	}
	if obj.Entries == nil {
		return nil, errors.New("a JSON object without \"entries\"; want [ {entry}, … ] or {\"entries\": [ … ]}")
	}
	return *obj.Entries, nil
}

func entriesFile(rel string, b []byte) LegacyFile {
	f := LegacyFile{Path: rel, Layout: LegacyWorkspaceMemory}
	stream := observer.GlobalStream
	if parts := strings.Split(rel, "/"); parts[0] == "scopes" {
		stream = parts[1]
		if !observer.ValidStream(stream) {
			f.Err = fmt.Errorf("%s: scope directory %q is not a workspace key (want ws-<20 hex digits>, as dsh-workspace-memory names them); rename it or import it by hand", rel, stream)
			return f
		}
	}
	raws, err := decodeEntries(b)
	if err != nil {
		f.Err = fmt.Errorf("read %s: %w", rel, err)
		return f
	}
	conflicts, badTimes := 0, 0
	for i, raw := range raws {
		var e legacyEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			f.Skipped = addCounts(f.Skipped, map[string]int{"entry not an object of the expected shape": 1})
			f.Notes = append(f.Notes, fmt.Sprintf("entry %d: %v", i+1, err))
			continue
		}
		ev, forget, conflict, badTime, ok := mapEntry(rel, stream, &e)
		if !ok {
			f.Skipped = addCounts(f.Skipped, map[string]int{"entry without content": 1})
			continue
		}
		if conflict {
			conflicts++
		}
		if badTime {
			badTimes++
		}
		f.Events = append(f.Events, ev)
		if forget != nil {
			f.Forgets = append(f.Forgets, *forget)
		}
	}
	if conflicts > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("entries of a conflict group, imported as active and tagged conflict:<group>: %d", conflicts))
	}
	if n := len(f.Forgets); n > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("entries superseded or forgotten in the legacy store, imported and then forgotten: %d", n))
	}
	if badTimes > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("entries without a readable updatedAt/createdAt, dated %s: %d", legacyEpoch, badTimes))
	}
	return f
}

// mapEntry maps one legacy entry. ok is false when it has nothing to
// remember (no content, description or title).
func mapEntry(rel, stream string, e *legacyEntry) (ev events.Envelope, forget *LegacyForget, conflict, badTime, ok bool) {
	id := flexString(e.ID)
	content := strings.TrimSpace(e.Content)
	for _, alt := range []string{e.Description, e.Title} {
		if content == "" {
			content = strings.TrimSpace(alt)
		}
	}
	if content == "" {
		return ev, nil, false, false, false
	}
	key := id
	if key == "" {
		key = content
	}
	status := strings.ToLower(strings.TrimSpace(e.Status))
	group := flexString(e.ConflictGroupID)
	d := payload.Remember{
		Content:     content,
		Title:       strings.TrimSpace(e.Title),
		Description: strings.TrimSpace(e.Description),
		Terms:       strings.Join(flexStrings(e.RetrievalTerms, " "), " "),
		Tags:        flexStrings(e.Tags, ","),
		Legacy: &payload.LegacyMeta{
			Source: rel, ID: id, Status: e.Status, ConflictGroupID: group,
			Supersedes: flexStrings(e.Supersedes, ","), SupersededBy: flexStrings(e.SupersededBy, ","),
			Provenance: rawOrNil(e.Provenance), Revisions: rawOrNil(e.Revisions),
			CreatedAt: flexString(e.CreatedAt), UpdatedAt: flexString(e.UpdatedAt),
		},
	}
	typ := strings.ToLower(strings.TrimSpace(e.Type))
	if payload.KnownEntryType(typ) {
		d.Type = typ
	} else if typ != "" {
		d.Type, d.Legacy.Type = payload.DefaultEntryType, e.Type
	}
	if imp, ok := legacyImportance(e.Importance); ok {
		// The fold reads any number so (payload.ClampImportance): the
		// event holds the importance the entry gets, 2 for 2.5.
		n := payload.ClampImportance(imp)
		d.Importance = &n
	}
	if group != "" {
		d.Tags = append(d.Tags, "conflict:"+group)
		conflict = true
	}
	t, tok := entryTime(e.UpdatedAt)
	if !tok {
		t, tok = entryTime(e.CreatedAt)
	}
	if !tok {
		t, badTime = legacyEpoch, true
	}
	rid := legacyID(rel, key)
	ev = legacyEnvelope(rid, stream, t, d)
	if inactiveStatuses[status] {
		reason := "legacy status " + status
		if by := d.Legacy.SupersededBy; len(by) > 0 {
			reason += " (superseded by " + strings.Join(by, ", ") + ")"
		}
		forget = &LegacyForget{ID: rid + ":forget", RememberID: rid, Stream: stream, Time: t, Reason: reason}
	}
	return ev, forget, conflict, badTime, true
}

// flexString reads a JSON string or number as text ("" for anything else).
func flexString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// flexStrings reads an array of strings (or numbers), or one string split
// at sep; blanks are dropped.
func flexStrings(raw json.RawMessage, sep string) []string {
	var out []string
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		for _, r := range arr {
			if s := flexString(r); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	for _, s := range strings.Split(flexString(raw), sep) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func rawOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil
	}
	return buf.Bytes()
}

func legacyImportance(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, true
	}
	s := strings.ToLower(flexString(raw))
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
		return v, true
	}
	v, ok := importanceWords[s]
	return v, ok
}

// entryTime reads a legacy timestamp: RFC 3339, a date, or a Unix time
// as a number or numeric string — milliseconds from 1e11 up (the
// JavaScript default), seconds below.
func entryTime(raw json.RawMessage) (string, bool) {
	s := flexString(raw)
	if s == "" {
		return "", false
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(envelopeTime), true
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t.UTC().Format(envelopeTime), true
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(n) || n < 0 || n > 1<<53 {
		return "", false
	}
	if n >= 1e11 {
		return time.UnixMilli(int64(n)).UTC().Format(envelopeTime), true
	}
	return time.Unix(int64(n), 0).UTC().Format(envelopeTime), true
}
