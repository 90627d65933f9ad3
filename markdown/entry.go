package markdown

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Entry is a memory entry as the Markdown files show it. The projector
// translates its rows into Entries; this package never sees the index.
type Entry struct {
	ID, Type, Title, Description, Content string
	Tags, Terms                           []string
	Importance                            int // 0–3
	Status                                string
	ConflictGroup                         string
	// LowConfidence marks, in a workspace summary only, an entry that
	// evidence spoke against: its title there ends with LowConfidenceMark.
	LowConfidence bool
}

// LowConfidenceMark ends the title of a low-confidence entry in a
// workspace summary. Part of the file format; do not change.
const LowConfidenceMark = " (low confidence)"

// Entry statuses (ARCHITECTURE §5). The list renderers show active and
// conflict entries; superseded, forgotten and unknown statuses are left out.
const (
	StatusActive     = "active"
	StatusConflict   = "conflict"
	StatusSuperseded = "superseded"
	StatusForgotten  = "forgotten"
)

const (
	// MaxImportance bounds Entry.Importance; Canonical clamps to 0..MaxImportance.
	MaxImportance = 3
	// DefaultImportance is what ParseEntry reports for a new block written
	// by hand without a meta line (the memory model's default).
	DefaultImportance = 1
)

// typeOrder is the order of the type sections of global.md and the
// knowledge files. Part of the on-disk format; do not change.
var typeOrder = []string{"preference", "rule", "decision", "architecture", "procedure", "fix", "fact"}

// typeHeadings names the section of each known type.
var typeHeadings = map[string]string{
	"preference": "Preferences", "rule": "Rules", "decision": "Decisions",
	"architecture": "Architecture", "procedure": "Procedures", "fix": "Fixes", "fact": "Facts",
}

// typeRank places known types in typeOrder, every other type after them
// and untyped entries last.
func typeRank(t string) int {
	if i := slices.Index(typeOrder, t); i >= 0 {
		return i
	}
	if t == "" {
		return len(typeOrder) + 1 // untyped last
	}
	return len(typeOrder)
}

// Canonical returns e in the form the Markdown files can carry exactly:
// what ParseEntry gives back for a rendered e. Rendering canonicalizes
// first, so Parse(Render(x)) equals Canonical(x), field by field:
//
//   - text is made valid UTF-8 (bad bytes become U+FFFD);
//   - Title is one line (line breaks become spaces), trimmed;
//   - Description and Content use \n line ends, lose trailing spaces and
//     tabs on each line and leading and trailing blank lines;
//   - Type and Status are lower-case words of [a-z0-9_-]; Status "" is active;
//   - Tags and Terms are trimmed one-line items without "," or "·", empty
//     and repeated items dropped, order kept; nil when empty;
//   - Importance is clamped to 0..3;
//   - ConflictGroup is kept only for a conflict entry (it is shown only there).
//
// ID is kept as is; anchors percent-encode what an anchor cannot hold.
func Canonical(e Entry) Entry {
	c := Entry{
		ID:          e.ID,
		Type:        cleanWord(e.Type),
		Title:       cleanLine(e.Title),
		Description: cleanText(e.Description),
		Content:     cleanText(e.Content),
		Tags:        cleanList(e.Tags),
		Terms:       cleanList(e.Terms),
		Importance:  min(max(e.Importance, 0), MaxImportance),
		Status:      cleanWord(e.Status),

		LowConfidence: e.LowConfidence,
	}
	if c.Status == "" {
		c.Status = StatusActive
	}
	if c.Status == StatusConflict {
		c.ConflictGroup = cleanItem(e.ConflictGroup)
	}
	return c
}

// equalEntry reports whether two canonical entries are the same.
func equalEntry(a, b Entry) bool { return cmpEntry(a, b) == 0 }

// cmpEntry is a total order over every field, the last tie-break of all
// sorts, so no output depends on the order of the input.
func cmpEntry(a, b Entry) int {
	return cmp.Or(
		strings.Compare(a.ID, b.ID),
		strings.Compare(a.Type, b.Type),
		strings.Compare(a.Title, b.Title),
		strings.Compare(a.Description, b.Description),
		strings.Compare(a.Content, b.Content),
		slices.Compare(a.Tags, b.Tags),
		slices.Compare(a.Terms, b.Terms),
		cmp.Compare(a.Importance, b.Importance),
		strings.Compare(a.Status, b.Status),
		strings.Compare(a.ConflictGroup, b.ConflictGroup),
	)
}

// cmpDisplay orders entries inside a type section: importance high to
// low, active before conflict, then by id.
func cmpDisplay(a, b Entry) int {
	return cmp.Or(
		cmp.Compare(b.Importance, a.Importance),
		cmp.Compare(statusRank(a.Status), statusRank(b.Status)),
		strings.Compare(a.ID, b.ID),
		cmpEntry(a, b),
	)
}

func statusRank(s string) int {
	if s == StatusConflict {
		return 1
	}
	return 0
}

// prepare canonicalizes entries, keeps the shown statuses, drops repeated
// ids (keeping the least entry in cmpEntry order, so the survivor does not
// depend on input order) and sorts them by type, then cmpDisplay.
func prepare(entries []Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		c := Canonical(e)
		if c.Status != StatusActive && c.Status != StatusConflict {
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, cmpEntry)
	out = slices.CompactFunc(out, func(a, b Entry) bool { return a.ID != "" && a.ID == b.ID })
	slices.SortStableFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(typeRank(a.Type), typeRank(b.Type)), strings.Compare(a.Type, b.Type), cmpDisplay(a, b))
	})
	return out
}

// --- text cleaning ---

var (
	lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")
	itemSeps   = strings.NewReplacer(",", " ", "·", " ")
)

func cleanLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = lineBreaks.Replace(s)
	return strings.TrimSpace(s)
}

// cleanText normalizes a multi-line text; see Canonical.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// cleanItem makes s fit one item of a meta line.
func cleanItem(s string) string {
	s = cleanLine(s)
	s = itemSeps.Replace(s)
	return strings.TrimSpace(s)
}

func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = cleanItem(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// cleanWord lower-cases s and keeps only [a-z0-9_-].
func cleanWord(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isWord(s string) bool { return s != "" && cleanWord(s) == s }

// --- the meta line ---

// metaSep separates the items of a meta line. Part of the on-disk format.
const metaSep = " · "

// formatMeta renders the items of a canonical entry's meta line (without
// the surrounding asterisks): [type] · importance N [· tags: a, b]
// [· terms: x, y] [· conflict[: group]].
func formatMeta(e Entry) string {
	var items []string
	if e.Type != "" {
		items = append(items, e.Type)
	}
	items = append(items, "importance "+strconv.Itoa(e.Importance))
	if len(e.Tags) > 0 {
		items = append(items, "tags: "+strings.Join(e.Tags, ", "))
	}
	if len(e.Terms) > 0 {
		items = append(items, "terms: "+strings.Join(e.Terms, ", "))
	}
	if e.Status == StatusConflict {
		if e.ConflictGroup != "" {
			items = append(items, "conflict: "+e.ConflictGroup)
		} else {
			items = append(items, "conflict")
		}
	}
	return strings.Join(items, metaSep)
}

func splitMeta(meta string) []string {
	items := strings.Split(meta, "·")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// parseImportance reads "importance N" or "importance: N".
func parseImportance(item string) (int, bool) {
	rest, ok := strings.CutPrefix(strings.ToLower(item), "importance")
	if !ok || rest == "" || rest[0] != ' ' && rest[0] != ':' && rest[0] != '\t' {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":")))
	if err != nil {
		return 0, false
	}
	return n, true
}

// keyed reads "key: value" for one of the given keys (case-insensitive).
func keyed(item string, keys ...string) (key, value string, ok bool) {
	k, v, found := strings.Cut(item, ":")
	if !found {
		return "", "", false
	}
	k = strings.ToLower(strings.TrimSpace(k))
	if !slices.Contains(keys, k) {
		return "", "", false
	}
	return k, strings.TrimSpace(v), true
}

// hasImportance reports whether a meta line names an importance; a
// starred line under the heading of a block without anchor is taken as its
// meta line only then, so "*emphasis*" in a hand-written block stays text.
func hasImportance(meta string) bool {
	for _, it := range splitMeta(meta) {
		if _, ok := parseImportance(it); ok {
			return true
		}
	}
	return false
}

// parseMeta reads a meta line into e. The first item is the type unless
// it is the importance; the rest are keyed, in any order.
func parseMeta(meta string, e *Entry) error {
	items := splitMeta(meta)
	seenImp := false
	for i, it := range items {
		if n, ok := parseImportance(it); ok {
			if seenImp {
				return fmt.Errorf("%w: importance given twice", ErrMeta)
			}
			if n < 0 || n > MaxImportance {
				return fmt.Errorf("%w: importance %d is outside 0–%d", ErrMeta, n, MaxImportance)
			}
			e.Importance, seenImp = n, true
			continue
		}
		if k, v, ok := keyed(it, "tags", "terms", "conflict"); ok {
			switch k {
			case "tags":
				e.Tags = strings.Split(v, ",")
			case "terms":
				e.Terms = strings.Split(v, ",")
			case "conflict":
				e.Status, e.ConflictGroup = StatusConflict, v
			}
			continue
		}
		if i > 0 && strings.EqualFold(it, "conflict") {
			e.Status = StatusConflict
			continue
		}
		if i == 0 && isWord(strings.ToLower(it)) {
			e.Type = strings.ToLower(it)
			continue
		}
		if it == "" && len(items) == 1 {
			continue
		}
		return fmt.Errorf("%w: cannot read %q (want a type, \"importance N\", \"tags: …\", \"terms: …\" or \"conflict: …\")", ErrMeta, it)
	}
	if !seenImp {
		return fmt.Errorf("%w: no \"importance N\" item", ErrMeta)
	}
	return nil
}

// --- escaping structural lines inside text ---

// structuralForEscape reports whether a text line, once stripped of its
// leading backslashes, could be read as structure: a heading of level 1–3
// or the start of an HTML comment (which covers anchors). It is a superset
// of what Parse treats as structure.
func structuralForEscape(core string) bool {
	t := strings.TrimLeft(core, " \t")
	return strings.HasPrefix(t, "<!--") || headingLevel(t) > 0
}

// escapeLine prefixes a backslash to a line that would be read as
// structure, and to one that is such a line already escaped (so "\### x"
// written by a person comes back as itself). Markdown shows "\#" as "#".
func escapeLine(l string) string {
	if structuralForEscape(strings.TrimLeft(l, `\`)) {
		return `\` + l
	}
	return l
}

// unescapeLine undoes escapeLine.
func unescapeLine(l string) string {
	if strings.HasPrefix(l, `\`) && structuralForEscape(strings.TrimLeft(l, `\`)) {
		return l[1:]
	}
	return l
}

// headingLevel returns n for an ATX heading of level 1–3 ("#", "##",
// "###" followed by a space, a tab or the end of the line), else 0.
// Level 4–6 headings are text inside a block.
func headingLevel(t string) int {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 3 {
		return 0
	}
	if n < len(t) && t[n] != ' ' && t[n] != '\t' {
		return 0
	}
	return n
}

// --- anchors ---

// anchorKinds are the anchors Parse recognizes. Part of the on-disk format.
const (
	kindMem        = "mem"
	kindCompaction = "compaction"
	kindSession    = "session"
)

// encodeID percent-encodes every byte of id outside [A-Za-z0-9._~:-] so an
// anchor never holds a space, "-->" or a line break. Ids the engine makes
// ("m-" and hex) pass unchanged.
func encodeID(id string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~:-", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// decodeID undoes encodeID; a malformed escape is kept as written.
func decodeID(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// anchorLine renders "<!-- kind:ID -->".
func anchorLine(kind, id string) string { return "<!-- " + kind + ":" + encodeID(id) + " -->" }

// parseAnchor reads a full-line HTML comment "<!-- kind:ID -->" (spaces
// optional) with kind of [a-z][a-z0-9-]* and a non-empty ID without spaces.
func parseAnchor(t string) (kind, id string, ok bool) {
	inner, ok := commentInner(t)
	if !ok {
		return "", "", false
	}
	kind, id, found := strings.Cut(strings.TrimSpace(inner), ":")
	if !found || id == "" || strings.ContainsAny(id, " \t") || kind == "" || kind[0] < 'a' || kind[0] > 'z' {
		return "", "", false
	}
	for _, r := range kind {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return "", "", false
		}
	}
	return kind, decodeID(id), true
}

// commentInner returns the inside of a line that is exactly one HTML
// comment ("<!-- … -->" after trimming spaces).
func commentInner(t string) (string, bool) {
	t = strings.TrimSpace(t)
	if len(t) < 7 || !strings.HasPrefix(t, "<!--") || !strings.HasSuffix(t, "-->") {
		return "", false
	}
	return t[4 : len(t)-3], true
}
