package plugin

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A file whose rows are one flow sequence, "[ {id: a, …}, {insert: […]} ]",
// gets our row as one more flow mapping on the same terms as a block
// file: only our row's bytes change. The parse tree gives where a node
// starts but not where it ends, so the end is found by trying each
// closing bracket after the start and keeping the one whose edit
// verifies; a bracket inside a string or a comment makes the parse
// differ, so it never verifies. There is no marker comment: a flow
// collection has no line of its own for it, and id dshmem says whose row
// it is.

// flowRow renders our entry as one flow mapping.
func flowRow(e Entry) ([]byte, error) {
	q := func(key, v string) (string, error) {
		s, err := quote(v)
		if err != nil {
			return "", fmt.Errorf("%s %q: %w", key, v, err)
		}
		return s, nil
	}
	name, err := q("name", e.Name)
	if err != nil {
		return nil, err
	}
	bin, err := q("binary", e.Config.Binary)
	if err != nil {
		return nil, err
	}
	root, err := q("root", e.Config.Root)
	if err != nil {
		return nil, err
	}
	home, err := q("dshHome", e.Config.DSHHome)
	if err != nil {
		return nil, err
	}
	off := ""
	if e.Disabled {
		off = ", disabled: true"
	}
	return fmt.Appendf(nil, "{insert: [{id: %s, name: %s%s, config: {binary: %s, root: %s, dshHome: %s}}]}", ID, name, off, bin, root, home), nil
}

// nodeOffset returns the byte offset of n's first character (yaml/v3
// columns count characters).
func (d *patchDoc) nodeOffset(n *yaml.Node) int {
	off := d.offset(n.Line)
	for c := 1; c < n.Column && off < len(d.src); c++ {
		_, size := utf8.DecodeRune(d.src[off:])
		off += size
	}
	return off
}

// maxTries bounds the candidate ends tried, so a huge file costs a
// refusal rather than minutes of parsing.
const maxTries = 256

// closers returns the offsets of the first maxTries "}" and "]" at or
// after from, or of the last maxTries when last is set.
func (d *patchDoc) closers(from int, last bool) []int {
	var out []int
	for i := from; i < len(d.src); i++ {
		if c := d.src[i]; c == '}' || c == ']' {
			out = append(out, i)
		}
	}
	if len(out) > maxTries {
		if last {
			return out[len(out)-maxTries:]
		}
		return out[:maxTries]
	}
	return out
}

// mergeFlow sets our row in a non-empty flow sequence. want is the rows
// the result must hold. It returns the new text and where the row
// starts; unchanged when the row is already exactly row.
func mergeFlow(d *patchDoc, row []byte, want []*yaml.Node) (text []byte, at int, unchanged bool, err error) {
	src := d.src
	switch {
	case d.ours >= 0:
		start := d.nodeOffset(d.items[d.ours])
		for _, e := range d.closers(start, false) {
			if bytes.Equal(src[start:e+1], row) {
				return src, start, true, nil
			}
			t := concat(src[:start], row, src[e+1:])
			if _, err := verify(t, want); err == nil {
				return t, start, false, nil
			}
		}
	case len(d.patches) > 0:
		// Before the user's patch of id dshmem, so that it applies.
		start := d.nodeOffset(d.patches[0])
		t := concat(src[:start], row, []byte(", "), src[start:])
		if _, err := verify(t, want); err == nil {
			return t, start, false, nil
		}
	default:
		// Before the closing bracket of the sequence: the last "]" that
		// verifies. A comma goes first unless one is already there.
		cs := d.closers(d.nodeOffset(d.top), true)
		// Right after the last row is tidier than right before "]", so
		// that goes first (it fails when a comment comes between).
		for i := len(cs) - 1; i >= 0; i-- {
			tight := len(bytes.TrimRight(src[:cs[i]], " \t\r\n"))
			for _, p := range []int{tight, cs[i]} {
				for _, sep := range []string{", ", " "} {
					t := concat(src[:p], []byte(sep), row, src[p:])
					if _, err := verify(t, want); err == nil {
						return t, p + len(sep), false, nil
					}
				}
			}
		}
	}
	return nil, 0, false, cannotEdit(d.top.Line)
}

// removeFlow removes our row from a flow sequence, with one comma next
// to it (the one after it, or before it when it is the last row).
func removeFlow(d *patchDoc, want []*yaml.Node) ([]byte, error) {
	src := d.src
	start := d.nodeOffset(d.items[d.ours])
	before := bytes.LastIndexByte(src[:start], ',')
	for _, e := range d.closers(start, false) {
		var tries [][]byte
		if after := bytes.IndexByte(src[e+1:], ','); after >= 0 {
			cut := e + 1 + after + 1
			for cut < len(src) && (src[cut] == ' ' || src[cut] == '\t') {
				cut++
			}
			tries = append(tries, concat(src[:start], src[cut:]))
		}
		if before >= 0 {
			tries = append(tries, concat(src[:before], src[e+1:]))
		}
		tries = append(tries, concat(src[:start], src[e+1:]))
		for _, t := range tries {
			if _, err := verify(t, want); err == nil {
				return t, nil
			}
		}
	}
	return nil, cannotEdit(d.items[d.ours].Line)
}

func cannotEdit(line int) error {
	return &PatchError{Line: line, Msg: "dshmem could not edit this flow sequence [ ... ] without changing another row; nothing was written. Edit dshmem's row by hand, or write the rows in block style (one \"- \" per row)"}
}
