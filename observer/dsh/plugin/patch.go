package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// PatchError is a cordis.patch.yml that dshmem will not edit: it does not
// parse, is not a sequence of rows, or names our id in a shape that cannot
// be edited safely. The file is left untouched.
type PatchError struct {
	Path string // the file, when known
	Line int    // 1-based; 0 when the parser names none
	Msg  string // what is wrong
}

func (e *PatchError) Error() string {
	where := e.Path
	if where == "" {
		where = PatchName
	}
	if e.Line > 0 {
		where += " line " + strconv.Itoa(e.Line)
	}
	return where + ": " + e.Msg
}

// patchDoc is a parsed cordis.patch.yml: its text, split in lines, and
// what the YAML tree says about it.
type patchDoc struct {
	src   []byte
	lines []int        // byte offset of the start of each line; lines[i] is line i+1
	top   *yaml.Node   // the top-level sequence; nil for a file with no document
	items []*yaml.Node // the rows
	ours  int          // index in items of our row, -1 when there is none
	entry *yaml.Node   // our entry (the mapping with id dshmem) in that row
	// patches are the rows {id: dshmem, …} without insert: the user's
	// patches of our entry, kept as they are.
	patches []*yaml.Node
}

// parsePatch parses src and finds our row. It refuses what the host would
// refuse and what it cannot edit without touching the rest of the file.
func parsePatch(src []byte) (*patchDoc, error) {
	d := &patchDoc{src: src, ours: -1, lines: []int{0}}
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			d.lines = append(d.lines, i+1)
		}
	}
	if !utf8.Valid(src) {
		i := 0
		for i < len(src) {
			r, n := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, &PatchError{Line: d.lineOf(i), Msg: "not valid UTF-8"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return d, nil // empty, or only comments
		}
		return nil, yamlError(err, d)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &PatchError{Line: d.docStart(next.Line), Msg: "a second YAML document starts here; the host reads a file of exactly one document (a sequence of patch rows)"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err, d)
	}
	if len(doc.Content) != 1 {
		return d, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.SequenceNode {
		return nil, &PatchError{Line: top.Line, Msg: fmt.Sprintf("the top level is %s, not a sequence of patch rows (each row starts with \"- \", like \"- insert: [...]\")", kindName(top))}
	}
	if err := checkKeys(top); err != nil {
		return nil, err
	}
	d.top, d.items = top, top.Content
	for i, row := range d.items {
		if row.Kind != yaml.MappingNode {
			return nil, &PatchError{Line: row.Line, Msg: fmt.Sprintf("row %d is %s; every row must be a mapping (a loader patch entry, like \"- insert: [...]\" or \"- id: x\")", i+1, kindName(row))}
		}
		insert := mapGet(row, "insert")
		if isOurID(mapGet(row, "id")) && insert == nil {
			d.patches = append(d.patches, row)
			continue
		}
		// Every other mapping that names id dshmem must be our entry,
		// alone in the insert list of a top-level row.
		var bad error
		walkMappings(row, func(m *yaml.Node) {
			if bad != nil || !isOurID(mapGet(m, "id")) {
				return
			}
			switch {
			case m == row:
				bad = &PatchError{Line: m.Line, Msg: "this row inserts entries into a group with id dshmem; dshmem's entry is not a group. Remove the row or change its id"}
			case insert == nil || insert.Kind != yaml.SequenceNode || !contains(insert.Content, m):
				bad = &PatchError{Line: m.Line, Msg: "id dshmem appears inside another entry, where dshmem does not write it; the host would load it beside dshmem's own row. Remove it, or rename its id"}
			case len(insert.Content) != 1:
				bad = &PatchError{Line: m.Line, Msg: "dshmem's entry shares this insert list with other entries, so its row cannot be edited alone; move it to a row of its own (\"- insert: [ {id: dshmem, ...} ]\") or delete it"}
			case mapGet(row, "id") != nil:
				bad = &PatchError{Line: m.Line, Msg: "dshmem's entry is inserted into a group here; it belongs in a top-level row without id"}
			default:
				if d.ours >= 0 {
					bad = &PatchError{Line: m.Line, Msg: fmt.Sprintf("a second entry with id dshmem (the first is at line %d); the host refuses duplicate ids. Delete one of the two rows", d.entry.Line)}
					return
				}
				d.ours, d.entry = i, m
			}
		})
		if bad != nil {
			return nil, bad
		}
	}
	if d.entry != nil {
		if v := mapGet(d.entry, "disabled"); v != nil && !isBool(v) {
			return nil, &PatchError{Line: v.Line, Msg: "disabled on dshmem's entry must be true or false"}
		}
	}
	return d, nil
}

// lineOf returns the 1-based line of byte offset off.
func (d *patchDoc) lineOf(off int) int {
	n := 0
	for n < len(d.lines) && d.lines[n] <= off {
		n++
	}
	return n
}

// docStart returns the line of the "---" that starts the document whose
// first node is at line, or line itself.
func (d *patchDoc) docStart(line int) int {
	for l := min(line, len(d.lines)); l >= 1; l-- {
		if bytes.HasPrefix(d.line(l), []byte("---")) {
			return l
		}
	}
	return line
}

// line returns the text of 1-based line l, without its newline.
func (d *patchDoc) line(l int) []byte {
	if l < 1 || l > len(d.lines) {
		return nil
	}
	end := len(d.src)
	if l < len(d.lines) {
		end = d.lines[l]
	}
	return bytes.TrimRight(d.src[d.lines[l-1]:end], "\r\n")
}

// offset returns the byte offset of the start of 1-based line l; one past
// the last line is the end of the file.
func (d *patchDoc) offset(l int) int {
	if l > len(d.lines) {
		return len(d.src)
	}
	return d.lines[l-1]
}

// enabled reports whether the host would load our entry: not disabled on
// the entry, nor by a later patch row. It returns the line that disables it.
func (d *patchDoc) disabledAt() int {
	line := 0
	if v := mapGet(d.entry, "disabled"); v != nil && boolValue(v) {
		line = v.Line
	}
	// Patch rows apply in order: only those after our row can reach it.
	for _, p := range d.patches {
		if v := mapGet(p, "disabled"); v != nil && d.rowIndex(p) > d.ours {
			if boolValue(v) {
				line = v.Line
			} else {
				line = 0
			}
		}
	}
	return line
}

// yamlLine finds the line in a yaml/v3 error message. The parser counts
// lines from 0 in its parser errors ("did not find expected …") and from
// 1 in its scanner errors; a message without a line is about line 1.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlError(err error, d *patchDoc) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if parserError(msg) {
			line++
		}
		// An error at the end of the file is about its last line.
		line = max(1, min(line, len(d.lines)))
	}
	// Two messages point before the place: find it.
	switch {
	case strings.HasPrefix(msg, "found a tab character"):
		for l := line; l <= len(d.lines); l++ {
			b := d.line(l)
			if i := bytes.IndexByte(b, '\t'); i >= 0 && len(bytes.TrimLeft(b[:i], " ")) == 0 {
				line = l
				break
			}
		}
	case strings.HasPrefix(msg, "unknown anchor '"):
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		if i := bytes.Index(d.src, []byte("*"+name)); i >= 0 {
			line = d.lineOf(i)
		}
	}
	return &PatchError{Line: line, Msg: "not valid YAML: " + msg}
}

// parserError reports whether msg comes from yaml/v3's parser (as opposed
// to its scanner), whose line numbers start at 0.
func parserError(msg string) bool {
	for _, s := range []string{
		"did not find expected key",
		"did not find expected node content",
		"did not find expected '-' indicator",
		"did not find expected ',' or ']'",
		"did not find expected ',' or '}'",
		"did not find expected <document start>",
	} {
		if strings.HasPrefix(msg, s) {
			return true
		}
	}
	return false
}

// checkKeys refuses a mapping that repeats a key: the host's parser
// (js-yaml) refuses the whole file, where yaml/v3 keeps both.
func checkKeys(n *yaml.Node) error {
	var bad error
	walkMappings(n, func(m *yaml.Node) {
		if bad != nil {
			return
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			k := m.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if first, ok := seen[k.Value]; ok {
				bad = &PatchError{Line: k.Line, Msg: fmt.Sprintf("key %q is repeated (first at line %d); the host refuses a mapping with a repeated key", k.Value, first)}
				return
			}
			seen[k.Value] = k.Line
		}
	})
	return bad
}

// walkMappings calls f on every mapping in n, n included, outside aliases.
func walkMappings(n *yaml.Node, f func(*yaml.Node)) {
	if n == nil || n.Kind == yaml.AliasNode {
		return
	}
	if n.Kind == yaml.MappingNode {
		f(n)
	}
	for _, c := range n.Content {
		walkMappings(c, f)
	}
}

// mapGet returns the value of key in mapping m, or nil.
func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func isOurID(v *yaml.Node) bool {
	return v != nil && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" && v.Value == ID
}

func isBool(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" }

func boolValue(v *yaml.Node) bool {
	b, err := strconv.ParseBool(strings.ToLower(v.Value))
	return isBool(v) && err == nil && b
}

func contains(ns []*yaml.Node, n *yaml.Node) bool {
	for _, c := range ns {
		if c == n {
			return true
		}
	}
	return false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.ShortTag() == "!!null" {
		return "empty (null)"
	}
	return fmt.Sprintf("a scalar (%q)", n.Value)
}

// scalarString returns the string value of a scalar, or "".
func scalarString(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// sameNode reports whether a and b hold the same data: kinds, resolved
// tags, values and children, whatever their style, position or comments.
func sameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.ScalarNode || a.Kind == yaml.AliasNode {
		if a.Value != b.Value {
			return false
		}
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
