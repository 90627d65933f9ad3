package markdown

import (
	"strconv"
	"sync"
)

// summaryPart is one entry as RenderSummaryKept uses it: its canonical
// form and, when it is shown, its block.
type summaryPart struct {
	e     Entry
	block []byte
}

// parts keeps the summary parts of entries as callers passed them, keyed
// by every field (partKey). A workspace summary is rendered again after
// each change of the workspace, from a top of the ranking that is mostly
// the same entries; cleaning and rendering each of them again cost more
// than the rest of the render. Both are functions of the entry alone, so
// the cache changes no output. It is emptied when it grows past
// maxParts.
var parts struct {
	sync.Mutex
	m map[string]summaryPart
}

const maxParts = 4096

// summaryParts returns the parts of the shown (active or conflict)
// entries of entries, in input order.
func summaryParts(entries []Entry) []summaryPart {
	out := make([]summaryPart, 0, len(entries))
	parts.Lock()
	defer parts.Unlock()
	if parts.m == nil || len(parts.m) > maxParts {
		parts.m = make(map[string]summaryPart, len(entries))
	}
	var kb []byte // reused: a look-up by string(kb) does not copy it
	for _, e := range entries {
		kb = partKey(kb[:0], e)
		p, ok := parts.m[string(kb)]
		if !ok {
			p.e = Canonical(e)
			if p.e.Status == StatusActive || p.e.Status == StatusConflict {
				p.block = summaryBlock(p.e)
			}
			parts.m[string(kb)] = p
		}
		if p.block != nil {
			out = append(out, p)
		}
	}
	return out
}

// entryFields is how many fields Entry has; partKey writes each of them
// (TestPartKeyCoversEntry fails when a field is added, so that the key
// gets it too).
const entryFields = 11

// partKey appends every field of e to b, each prefixed by its length,
// so that two entries get the same key only when they are equal.
func partKey(b []byte, e Entry) []byte {
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	list := func(l []string) {
		b = strconv.AppendInt(b, int64(len(l)), 10)
		b = append(b, '[')
		for _, s := range l {
			str(s)
		}
	}
	str(e.ID)
	str(e.Type)
	str(e.Title)
	str(e.Description)
	str(e.Content)
	list(e.Tags)
	list(e.Terms)
	b = strconv.AppendInt(b, int64(e.Importance), 10)
	b = append(b, ';')
	str(e.Status)
	str(e.ConflictGroup)
	if e.LowConfidence {
		b = append(b, "low"...)
	}
	return b
}
