package markdown

import (
	"fmt"
	"strconv"
	"strings"
)

// Diff is what a hand edit did to a rendered entry file.
type Diff struct {
	Revised []Entry  // anchored blocks whose fields changed: the edited entries, canonical, with their ids
	Added   []Entry  // blocks without anchor (and repeated anchors after the first): new entries, ID ""
	Foreign []Entry  // blocks anchored with an id the rendered file does not hold (moved or pasted from another file)
	Removed []string // ids of entries whose mem: anchor is gone, in the rendered file's order
	Stray   []string // text outside every block that the rendered file did not have; sync cannot place it

	// Damaged means the edit must not be applied: more than half of the
	// rendered file's anchored blocks are gone, or the edited file has a
	// block that does not parse, or it is not valid UTF-8 or too large.
	// The other fields are still filled where they could be.
	Damaged bool
	Reason  string // why Damaged, for the user
}

// Empty reports whether the edit changed nothing sync acts on.
func (d Diff) Empty() bool {
	return !d.Damaged && len(d.Revised) == 0 && len(d.Added) == 0 && len(d.Foreign) == 0 && len(d.Removed) == 0 && len(d.Stray) == 0
}

// Compare reads what a hand edit did: rendered is the file as this package
// rendered it, edited the file as found on disk.
//
// Blocks are compared by their parsed, canonical fields, not by bytes, so
// changes of whitespace alone (blank lines between blocks, trailing spaces,
// \r\n line ends, blank lines or missing newline at the end of the file)
// and reordering blocks give an empty Diff. A new "###" block with an
// empty title and no text is ignored. Blocks anchored compaction: or
// session: count towards damage but are otherwise not compared.
//
// The error is for a rendered file that cannot be parsed (a bug of the
// caller); every problem of the edited file is reported as Damaged.
func Compare(rendered, edited []byte) (Diff, error) {
	rd, err := Parse(rendered)
	if err != nil {
		return Diff{}, fmt.Errorf("parse rendered file: %w", err)
	}
	orig := map[string]Entry{}
	var anchors []string // in file order, each once
	inRendered := map[string]bool{}
	unanchored := map[string]int{} // blocks without anchor the rendered file already has, by entryKey
	for _, b := range rd.Blocks {
		if b.Anchor == "" {
			if e, err := ParseEntry(b); err == nil {
				unanchored[entryKey(e)]++
			}
			continue
		}
		if inRendered[b.Anchor] {
			continue
		}
		inRendered[b.Anchor] = true
		anchors = append(anchors, b.Anchor)
		if strings.HasPrefix(b.Anchor, kindMem+":") {
			e, err := ParseEntry(b)
			if err != nil {
				return Diff{}, fmt.Errorf("parse rendered file: %w", err)
			}
			orig[b.Anchor] = e
		}
	}

	var d Diff
	ed, err := Parse(edited)
	if err != nil {
		d.Damaged, d.Reason = true, "the edited file cannot be read: "+err.Error()
		return d, nil
	}
	damage := func(err error) {
		if !d.Damaged {
			d.Damaged, d.Reason = true, "a block cannot be read: "+err.Error()+"; fix it or restore the file"
		}
	}
	seen := map[string]bool{}
	for _, b := range ed.Blocks {
		isMem := strings.HasPrefix(b.Anchor, kindMem+":")
		switch {
		case b.Anchor != "" && !isMem:
			seen[b.Anchor] = true // compaction and session blocks: not entries
		case b.Anchor != "" && seen[b.Anchor]:
			// a repeated anchor: a block copied to start a new one
			e, err := ParseEntry(b)
			if err != nil {
				damage(err)
				continue
			}
			e.ID = ""
			d.Added = append(d.Added, e)
		case b.Anchor != "":
			seen[b.Anchor] = true
			e, err := ParseEntry(b)
			if err != nil {
				damage(err)
				continue
			}
			if o, ok := orig[b.Anchor]; !ok {
				d.Foreign = append(d.Foreign, e)
			} else if !equalEntry(o, e) {
				d.Revised = append(d.Revised, e)
			}
		default:
			e, err := ParseEntry(b)
			if err != nil {
				damage(err)
				continue
			}
			if e.Title == "" && e.Description == "" && e.Content == "" {
				continue
			}
			if k := entryKey(e); unanchored[k] > 0 {
				unanchored[k]-- // not new: rendered so
				continue
			}
			d.Added = append(d.Added, e)
		}
	}
	gone := 0
	for _, a := range anchors {
		if seen[a] {
			continue
		}
		gone++
		if id, ok := strings.CutPrefix(a, kindMem+":"); ok {
			d.Removed = append(d.Removed, id)
		}
	}
	if gone*2 > len(anchors) {
		if d.Damaged {
			d.Reason += "; "
		}
		d.Damaged = true
		d.Reason += fmt.Sprintf("%d of the file's %d blocks are gone (more than half): this looks like damage, not an edit; restore the file or forget the entries explicitly", gone, len(anchors))
	}
	d.Stray = strayAdded(rd.Stray, ed.Stray)
	return d, nil
}

// entryKey is a string equal for equal canonical entries.
func entryKey(e Entry) string {
	var b strings.Builder
	for _, s := range []string{e.ID, e.Type, e.Title, e.Description, e.Content, e.Status, e.ConflictGroup} {
		b.WriteString(strconv.Quote(s))
	}
	for _, list := range [][]string{e.Tags, e.Terms} {
		b.WriteString(strconv.Itoa(len(list)))
		for _, s := range list {
			b.WriteString(strconv.Quote(s))
		}
	}
	b.WriteString(strconv.Itoa(e.Importance))
	return b.String()
}

// strayAdded returns the lines of edited that rendered does not have,
// counting repeats.
func strayAdded(rendered, edited []string) []string {
	have := map[string]int{}
	for _, s := range rendered {
		have[s]++
	}
	var out []string
	for _, s := range edited {
		if have[s] > 0 {
			have[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}
