package distill

import (
	"bytes"
	"encoding/json"
	"sort"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// Dice returns the Dice coefficient of the term sets of a and b
// (tokenize.Terms): 2·|A∩B| / (|A|+|B|), in [0, 1]. Two texts without a
// term have nothing in common: Dice returns 0 for them.
func Dice(a, b string) float64 {
	ta, tb := tokenize.Terms(a), tokenize.Terms(b)
	if len(ta)+len(tb) == 0 {
		return 0
	}
	set := make(map[string]struct{}, len(ta))
	for _, t := range ta {
		set[t] = struct{}{}
	}
	common := 0
	for _, t := range tb {
		if _, ok := set[t]; ok {
			common++
		}
	}
	return 2 * float64(common) / float64(len(ta)+len(tb))
}

// CapInput returns the newest messages of msgs whose texts hold at most
// maxChars runes in all, in their original order (newest last). Messages
// are kept whole and contiguous: the walk from the newest stops at the
// first message that does not fit. The one exception is a newest message
// longer than maxChars on its own: its first maxChars runes are kept (a
// prefix, so a quote from it is still verbatim text of the original).
// maxChars <= 0 means MaxInputChars.
func CapInput(msgs []Message, maxChars int) []Message {
	if maxChars <= 0 {
		maxChars = MaxInputChars
	}
	total, start := 0, len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		n := utf8.RuneCountInString(msgs[i].Text)
		if total+n > maxChars {
			break
		}
		total += n
		start = i
	}
	if start == len(msgs) && len(msgs) > 0 {
		last := msgs[len(msgs)-1]
		last.Text = TruncateRunes(last.Text, maxChars)
		return []Message{last}
	}
	out := make([]Message, len(msgs)-start)
	copy(out, msgs[start:])
	return out
}

// SelectRelated picks the existing entries a distiller gets as context:
// those that are not superseded or forgotten and share at least one term
// with the messages (assistant and tool text included, injected text not:
// injected memory would only pull itself back in), ranked by the number of
// shared terms, then importance, then their order in candidates. It keeps
// at most MaxRelated entries and MaxRelatedBytes of them as rendered for
// the model; an entry that does not fit in the bytes left is skipped and
// smaller ones after it may still be taken (capRelated).
func SelectRelated(msgs []Message, candidates []Entry) []Entry {
	query := make(map[string]struct{})
	for _, m := range msgs {
		if m.Injected {
			continue
		}
		for _, t := range tokenize.Terms(m.Text) {
			query[t] = struct{}{}
		}
	}
	type scored struct {
		e     Entry
		score int
		idx   int
	}
	var ranked []scored
	for i, e := range candidates {
		if e.Status == payload.StatusSuperseded || e.Status == payload.StatusForgotten {
			continue
		}
		score := 0
		for _, t := range tokenize.Terms(entryText(e)) {
			if _, ok := query[t]; ok {
				score++
			}
		}
		if score > 0 {
			ranked = append(ranked, scored{e, score, i})
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.e.Importance != b.e.Importance {
			return a.e.Importance > b.e.Importance
		}
		return a.idx < b.idx
	})
	entries := make([]Entry, len(ranked))
	for i, r := range ranked {
		entries[i] = r.e
	}
	kept, _ := capRelated(entries)
	return kept
}

// capRelated keeps, in order, at most MaxRelated of entries and at most
// MaxRelatedBytes of them as rendered for the model; an entry that does not
// fit in the bytes left is skipped and smaller ones after it may still be
// taken. It returns the entries kept and their rendered lines.
func capRelated(entries []Entry) (kept []Entry, lines [][]byte) {
	used := 0
	for _, e := range entries {
		if len(kept) == MaxRelated {
			break
		}
		line := renderEntry(e)
		if used+len(line) > MaxRelatedBytes {
			continue
		}
		used += len(line)
		kept, lines = append(kept, e), append(lines, line)
	}
	return kept, lines
}

// entryText is the searchable text of an entry: what term overlap and
// Dice look at.
func entryText(e Entry) string {
	var b bytes.Buffer
	for _, s := range []string{e.Title, e.Description, e.Content} {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	for _, s := range e.Tags {
		b.WriteString(s)
		b.WriteByte(' ')
	}
	for _, s := range e.Terms {
		b.WriteString(s)
		b.WriteByte(' ')
	}
	return b.String()
}

// opText is the text of an op compared with entryText for duplicates.
func opText(o Op) string {
	return entryText(Entry{Title: o.Title, Description: value(o.Description), Content: o.Content, Tags: o.Tags, Terms: o.Terms})
}

// promptEntry and promptMessage are the JSON lines the openai distiller
// sends; JSON keeps a message's text from forging the tag of another.
type promptEntry struct {
	ID            string   `json:"id"`
	Type          string   `json:"type,omitempty"`
	Status        string   `json:"status,omitempty"`
	ConflictGroup string   `json:"conflictGroup,omitempty"`
	Title         string   `json:"title,omitempty"`
	Description   string   `json:"description,omitempty"`
	Content       string   `json:"content,omitempty"`
	Tags          []string `json:"tags,omitempty"`
	Terms         []string `json:"terms,omitempty"`
	Importance    int      `json:"importance,omitempty"`
}

type promptMessage struct {
	Seq     uint64 `json:"seq"`
	EventID string `json:"eventId"`
	Role    string `json:"role"`
	Note    string `json:"note,omitempty"`
	Text    string `json:"text"`
}

// InjectedNote marks, in the prompt, a user-role message that a plugin
// injected.
const InjectedNote = "[injected — not the user]"

// renderEntry is e as one JSON line of the prompt; its length is what the
// MaxRelatedBytes budget counts.
func renderEntry(e Entry) []byte {
	return jsonLine(promptEntry{
		ID: e.ID, Type: e.Type, Status: e.Status, ConflictGroup: e.ConflictGroup,
		Title: e.Title, Description: e.Description, Content: e.Content,
		Tags: e.Tags, Terms: e.Terms, Importance: e.Importance,
	})
}

func renderMessage(m Message) []byte {
	pm := promptMessage{Seq: m.Seq, EventID: m.EventID, Role: m.Role, Text: m.Text}
	if m.Injected {
		pm.Role = "injected"
		pm.Note = InjectedNote
	}
	return jsonLine(pm)
}

// jsonLine encodes v as one line without HTML escaping, so '<' and '&'
// stay as typed and the model can quote them verbatim.
func jsonLine(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only strings, ints and slices of strings: cannot fail.
		panic(err)
	}
	return b.Bytes()
}

// TruncateRunes cuts s to at most n runes, at a rune boundary, so the
// result is a prefix of s (valid UTF-8 when s is); n <= 0 gives "". Every
// cap of this package cuts with it, and so may a caller that caps the
// messages it puts in a Request.
func TruncateRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
