package plugin

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Config is what the plugin reads from its entry's config. The key names
// are the contract with plugin.mjs; do not rename them.
type Config struct {
	Binary  string `json:"binary"`  // absolute path of the dshmem binary the plugin runs
	Root    string `json:"root"`    // absolute memory root
	DSHHome string `json:"dshHome"` // absolute DSH home the row was written into
}

// Entry is dshmem's entry in the host's plugin tree.
type Entry struct {
	Name     string `json:"name"` // absolute path of plugin.mjs
	Disabled bool   `json:"disabled"`
	Config   Config `json:"config"`
}

// Marker is the comment line written above our row; a comment line that
// starts with markerPrefix right above the row is ours and goes with it.
const (
	Marker       = "# dshmem: long-term memory for DSH (written by `dshmem dsh install`; `dshmem dsh uninstall` removes it)"
	markerPrefix = "# dshmem:"
)

// Action says what an edit did to our row.
type Action string

const (
	Added     Action = "added"     // there was no row; it was appended
	Replaced  Action = "replaced"  // a row with other bytes was replaced in place
	Unchanged Action = "unchanged" // the row is already exactly what would be written
	Removed   Action = "removed"
	Absent    Action = "absent" // RemoveRow found no row
)

// Edit is the outcome of MergeRow or RemoveRow.
type Edit struct {
	Text   []byte // the new file (equal to the old one when Unchanged or Absent)
	Action Action
	Line   int // line of our row: in the new file, or in the old one for Removed
	// Delete is set by RemoveRow when nothing but blank lines would be
	// left: the file should be removed, as an empty file stops the host.
	Delete bool
	// EmptyList is set by RemoveRow when our row was the last one and
	// comments remain: "[]" was appended so the host still reads a sequence.
	EmptyList bool
	// DisabledAt is the line that switches our entry off (the entry's own
	// disabled: true, kept by MergeRow, or a later patch row); 0 when on.
	DisabledAt int
	// Patches are the lines of the user's rows {id: dshmem, …}: kept.
	Patches []int
	// Dropped names what the old entry held that the new one does not
	// (keys added by hand); the backup keeps them.
	Dropped []string
	Old     *Entry // the entry as it was, if there was one
}

// Inspect returns our entry as src holds it (nil when there is none) and
// the line of its row; the Edit fields DisabledAt and Patches are filled.
func Inspect(src []byte) (*Entry, Edit, error) {
	d, err := parsePatch(src)
	if err != nil {
		return nil, Edit{}, err
	}
	ed := Edit{Text: src, Action: Absent, Patches: d.patchLines()}
	if d.entry == nil {
		return nil, ed, nil
	}
	e := entryOf(d.entry)
	ed.Action, ed.Line, ed.DisabledAt, ed.Old = Unchanged, d.items[d.ours].Line, d.disabledAt(), &e
	return &e, ed, nil
}

// MergeRow returns src with our row set to e: appended when there is none,
// replaced in place when its bytes differ, untouched when they are equal.
// A disabled: true the user put on our entry is kept. Every byte outside
// our row (and its marker comment) is kept.
func MergeRow(src []byte, e Entry) (Edit, error) {
	d, err := parsePatch(src)
	if err != nil {
		return Edit{}, err
	}
	ed := Edit{Patches: d.patchLines()}
	if d.entry != nil {
		old := entryOf(d.entry)
		ed.Old, ed.Dropped = &old, droppedKeys(d.entry)
		e.Disabled = e.Disabled || old.Disabled
	}
	indent := ""
	if d.top != nil && d.top.Style&yaml.FlowStyle == 0 {
		indent = strings.Repeat(" ", d.top.Column-1)
	}
	row, err := renderRow(e, indent)
	if err != nil {
		return Edit{}, err
	}
	eol := lineEnd(src)
	row = bytes.ReplaceAll(row, []byte("\n"), []byte(eol))
	// The rows the edited file must hold: ours set, every other one as it was.
	want := append([]*yaml.Node(nil), d.items...)
	rowNode, err := rowNode(row)
	if err != nil {
		return Edit{}, err
	}
	switch {
	case d.ours >= 0:
		want[d.ours] = rowNode
	case len(d.patches) > 0:
		i := d.rowIndex(d.patches[0])
		want = append(want[:i], append([]*yaml.Node{rowNode}, want[i:]...)...)
	default:
		want = append(want, rowNode)
	}
	var text []byte
	var at int // byte offset where the row lands
	switch {
	case d.top == nil: // no file, an empty one, or only comments
		text, at = appendRow(src, row, eol)
		ed.Action = Added
	case d.top.Style&yaml.FlowStyle != 0 && len(d.items) > 0:
		frow, err := flowRow(e)
		if err != nil {
			return Edit{}, err
		}
		text, at, unchanged, err := mergeFlow(d, frow, want)
		if err != nil {
			return Edit{}, err
		}
		ed.Text, ed.Action = text, Added
		switch {
		case unchanged:
			ed.Action = Unchanged
		case d.ours >= 0:
			ed.Action = Replaced
		}
		nd, _ := parsePatch(text)
		ed.Line, ed.DisabledAt = nd.lineOf(at), nd.disabledAt()
		return ed, nil
	case d.top.Style&yaml.FlowStyle != 0:
		open, end, ok := d.emptyFlow()
		if !ok {
			return Edit{}, &PatchError{Line: d.top.Line, Msg: "cannot replace this empty sequence [] with dshmem's row: put [] alone on its line, or delete it"}
		}
		text = concat(src[:open], row, src[end:])
		at, ed.Action = open, Added
	case d.ours < 0 && len(d.patches) > 0:
		// The user's patch of id dshmem (disabled: true, say) reaches our
		// entry only from a later row: go in before it and its comments.
		l := d.dashLine(d.rowIndex(d.patches[0]))
		for l > 1 && comment(d.line(l-1), d.top.Column-1) {
			l--
		}
		at = d.offset(l)
		text = concat(src[:at], row, src[at:])
		ed.Action = Added
	case d.ours < 0:
		text, at = appendRow(src, row, eol)
		ed.Action = Added
	default:
		from, to, err := d.span(d.ours)
		if err != nil {
			return Edit{}, err
		}
		a, b := d.offset(from), d.offset(to)
		if bytes.Equal(src[a:b], row) {
			ed.Text, ed.Action, ed.Line = src, Unchanged, d.items[d.ours].Line
			ed.DisabledAt = d.disabledAt()
			return ed, nil
		}
		text = concat(src[:a], row, src[b:])
		at, ed.Action = a, Replaced
	}
	nd, err := verify(text, want)
	if err != nil {
		return Edit{}, err
	}
	ed.Text = text
	ed.Line = nd.lineOf(at) + 1 // the marker comment, then the row
	ed.DisabledAt = nd.disabledAt()
	return ed, nil
}

// RemoveRow returns src without our row and its marker comment. When no
// row is left it makes sure the host can still read the file: Delete
// when nothing else is left, "[]" appended when comments are.
func RemoveRow(src []byte) (Edit, error) {
	d, err := parsePatch(src)
	if err != nil {
		return Edit{}, err
	}
	ed := Edit{Text: src, Action: Absent, Patches: d.patchLines()}
	if d.entry == nil {
		return ed, nil
	}
	old := entryOf(d.entry)
	ed.Old, ed.Line = &old, d.items[d.ours].Line
	want := append(append([]*yaml.Node(nil), d.items[:d.ours]...), d.items[d.ours+1:]...)
	if d.top.Style&yaml.FlowStyle != 0 {
		text, err := removeFlow(d, want)
		if err != nil {
			return Edit{}, err
		}
		ed.Text, ed.Action = text, Removed
		return ed, nil
	}
	from, to, err := d.span(d.ours)
	if err != nil {
		return Edit{}, err
	}
	text := concat(src[:d.offset(from)], src[d.offset(to):])
	if len(want) == 0 {
		if len(bytes.TrimSpace(text)) == 0 {
			ed.Text, ed.Action, ed.Delete = nil, Removed, true
			return ed, nil
		}
		eol := lineEnd(src)
		text, _ = appendRow(text, []byte("[]"+eol), eol)
		ed.EmptyList = true
	}
	if _, err := verify(text, want); err != nil {
		return Edit{}, err
	}
	ed.Text, ed.Action = text, Removed
	return ed, nil
}

// verify parses the edited text and checks that its rows are exactly
// want: the edit changed our row and nothing else.
func verify(text []byte, want []*yaml.Node) (*patchDoc, error) {
	nd, err := parsePatch(text)
	if err == nil && len(nd.items) != len(want) {
		err = fmt.Errorf("%d rows, want %d", len(nd.items), len(want))
	}
	for i := 0; err == nil && i < len(want); i++ {
		if !sameNode(nd.items[i], want[i]) {
			err = fmt.Errorf("row %d (line %d) would change", i+1, want[i].Line)
		}
	}
	if err != nil {
		return nil, &PatchError{Msg: fmt.Sprintf("dshmem could not edit this file without changing something else (%v); nothing was written. Edit dshmem's row by hand, or report the file", err)}
	}
	return nd, nil
}

// span returns the lines [from, to) of row i: from its "-" (or our marker
// comment right above it) to the last line before the next row that is
// not blank and not a comment at the sequence's own indentation — such
// comments belong to what follows.
func (d *patchDoc) span(i int) (from, to int, err error) {
	col := d.top.Column - 1
	from = d.dashLine(i)
	if from == 0 {
		return 0, 0, &PatchError{Line: d.items[i].Line, Msg: "cannot find the \"-\" that starts this row; put \"- \" on the row's first line"}
	}
	to = len(d.lines) + 1
	if i+1 < len(d.items) {
		if to = d.dashLine(i + 1); to == 0 {
			return 0, 0, &PatchError{Line: d.items[i+1].Line, Msg: "cannot find the \"-\" that starts this row; put \"- \" on the row's first line"}
		}
	}
	for to-1 > from && trailer(d.line(to-1), col) {
		to--
	}
	if from > 1 && strings.HasPrefix(strings.TrimSpace(string(d.line(from-1))), markerPrefix) {
		from--
	}
	return from, to, nil
}

// dashLine returns the line of the "-" that starts row i, or 0.
func (d *patchDoc) dashLine(i int) int {
	col, floor := d.top.Column-1, 0
	if i > 0 {
		floor = d.items[i-1].Line
	}
	for l := d.items[i].Line; l > floor; l-- {
		b := d.line(l)
		if len(b) > col && len(bytes.TrimLeft(b[:col], " ")) == 0 && b[col] == '-' &&
			(len(b) == col+1 || b[col+1] == ' ' || b[col+1] == '\t') {
			return l
		}
	}
	return 0
}

// trailer reports whether line b is blank or a comment indented at most
// col: text that closes a row rather than belongs to it.
func trailer(b []byte, col int) bool {
	t := bytes.TrimLeft(b, " \t")
	return len(bytes.TrimSpace(t)) == 0 || (t[0] == '#' && len(b)-len(t) <= col)
}

// comment reports whether line b is a comment indented at most col.
func comment(b []byte, col int) bool {
	t := bytes.TrimLeft(b, " \t")
	return len(t) > 0 && t[0] == '#' && len(b)-len(t) <= col
}

// rowIndex returns the index of row n in d.items.
func (d *patchDoc) rowIndex(n *yaml.Node) int {
	for i, r := range d.items {
		if r == n {
			return i
		}
	}
	return -1
}

// emptyFlow returns the byte range of an empty top-level "[]" that stands
// alone on its line (with its newline), so our block row can replace it.
func (d *patchDoc) emptyFlow() (open, end int, ok bool) {
	if d.top.Column != 1 {
		return 0, 0, false
	}
	line := d.line(d.top.Line)
	if string(bytes.TrimSpace(line)) != "[]" {
		return 0, 0, false
	}
	open = d.offset(d.top.Line)
	return open, d.offset(d.top.Line + 1), true
}

func (d *patchDoc) patchLines() []int {
	var ls []int
	for _, p := range d.patches {
		ls = append(ls, p.Line)
	}
	return ls
}

// renderRow writes our marker and row in block style, every line
// prefixed by indent (the file's own sequence indentation).
func renderRow(e Entry, indent string) ([]byte, error) {
	var b bytes.Buffer
	line := func(depth int, s string) {
		b.WriteString(indent + strings.Repeat(" ", depth) + s + "\n")
	}
	vals := []struct{ key, v string }{{"name", e.Name}, {"binary", e.Config.Binary}, {"root", e.Config.Root}, {"dshHome", e.Config.DSHHome}}
	q := map[string]string{}
	for _, kv := range vals {
		s, err := quote(kv.v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", kv.key, kv.v, err)
		}
		q[kv.key] = s
	}
	line(0, Marker)
	line(0, "- insert:")
	line(4, "- id: "+ID)
	line(6, "name: "+q["name"])
	if e.Disabled {
		line(6, "disabled: true")
	}
	line(6, "config:")
	line(8, "binary: "+q["binary"])
	line(8, "root: "+q["root"])
	line(8, "dshHome: "+q["dshHome"])
	// The row must read back as exactly what was meant.
	n, err := rowNode(b.Bytes())
	if err == nil {
		if got := entryOf(mapGet(n, "insert").Content[0]); got != e {
			err = fmt.Errorf("reads back as %+v", got)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("render dshmem's row: %w", err)
	}
	return b.Bytes(), nil
}

// rowNode parses a rendered row alone.
func rowNode(row []byte) (*yaml.Node, error) {
	d, err := parsePatch(row)
	if err != nil {
		return nil, err
	}
	if d.ours != 0 || len(d.items) != 1 {
		return nil, fmt.Errorf("render dshmem's row: not one row")
	}
	return d.items[0], nil
}

// plainPath is a scalar safe to write unquoted: it starts with "/", so
// YAML reads it as a string, and holds nothing YAML gives a meaning.
var plainPath = regexp.MustCompile(`^/[A-Za-z0-9/_.+@=-]*$`)

// quote returns s as a YAML scalar: plain when that is safe, otherwise
// double-quoted, with the escapes YAML and JSON share.
func quote(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty")
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("not valid UTF-8; YAML cannot hold it")
	}
	if plainPath.MatchString(s) {
		return s, nil
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String(), nil
}

// entryOf reads our entry's fields from its mapping.
func entryOf(m *yaml.Node) Entry {
	cfg := mapGet(m, "config")
	e := Entry{
		Name: scalarString(mapGet(m, "name")),
		Config: Config{
			Binary:  scalarString(mapGet(cfg, "binary")),
			Root:    scalarString(mapGet(cfg, "root")),
			DSHHome: scalarString(mapGet(cfg, "dshHome")),
		},
	}
	if v := mapGet(m, "disabled"); v != nil {
		e.Disabled = boolValue(v)
	}
	return e
}

// droppedKeys names the keys of our old entry that a new row does not write.
func droppedKeys(m *yaml.Node) []string {
	var out []string
	known := map[string]bool{"id": true, "name": true, "disabled": true, "config": true}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i].Value; !known[k] {
			out = append(out, k)
		}
	}
	if cfg := mapGet(m, "config"); cfg != nil && cfg.Kind == yaml.MappingNode {
		known := map[string]bool{"binary": true, "root": true, "dshHome": true}
		for i := 0; i+1 < len(cfg.Content); i += 2 {
			if k := cfg.Content[i].Value; !known[k] {
				out = append(out, "config."+k)
			}
		}
	}
	return out
}

// appendRow appends row to src, after a line end if src lacks a final one.
func appendRow(src, row []byte, eol string) ([]byte, int) {
	out := append([]byte(nil), src...)
	switch {
	case len(out) == 0 || out[len(out)-1] == '\n':
	case out[len(out)-1] == '\r':
		out = append(out, '\n')
	default:
		out = append(out, eol...)
	}
	return append(out, row...), len(out)
}

// lineEnd is the line end the file uses, judged by its first one: CRLF
// for a file from Windows, so we do not mix line ends into it. Our own
// edits never change a file's first line end, so the choice is stable.
func lineEnd(src []byte) string {
	i := bytes.IndexByte(src, '\n')
	if (i > 0 && src[i-1] == '\r') || (i < 0 && bytes.HasSuffix(src, []byte("\r"))) {
		return "\r\n"
	}
	return "\n"
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
