package markdown

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxParseBytes caps the input of Parse and Compare. Projections are
// kilobytes; the cap keeps a stray huge file from costing seconds.
const MaxParseBytes = 8 << 20

// Block is one block of a parsed file: an anchored block (entry,
// compaction or session summary) or a new block a person wrote under a
// "###" heading without an anchor.
type Block struct {
	Anchor     string // "mem:ID", "compaction:ID", "session:ID" (ID decoded); "" for a new block
	Title      string // text of the "###" heading
	HasHeading bool   // false when an anchor is not followed by a "###" heading
	Meta       string // inside of the *meta* line, without the asterisks; "" if none
	Quote      string // the ">" lines right under the heading or meta line, markers removed
	Body       string // the text after them, unescaped, without blank lines at either end
	Raw        string // the block's bytes, b[Start:End]
	Start, End int    // byte offsets: first line of the block, end of its last non-blank line
	Line       int    // 1-based line of Start
}

// Document is a parsed Markdown projection.
type Document struct {
	Title  string   // text of the first level-1 heading
	Blocks []Block  // in file order
	Stray  []string // trimmed non-blank lines outside every block, other than headings and comment lines
}

type line struct {
	text       string // without "\n" and a trailing "\r"
	start, end int    // byte offsets; end is past the "\n"
}

func splitLines(b []byte) []line {
	var ls []line
	for start := 0; start < len(b); {
		end := start
		for end < len(b) && b[end] != '\n' {
			end++
		}
		text := strings.TrimSuffix(string(b[start:end]), "\r")
		if end < len(b) {
			end++
		}
		ls = append(ls, line{text, start, end})
		start = end
	}
	return ls
}

func isBlank(s string) bool { return strings.TrimRight(s, " \t") == "" }

// Parse splits a Markdown projection into blocks. The structure it reads,
// line by line (leading spaces and tabs ignored):
//
//   - an anchor line "<!-- kind:ID -->" starts an anchored block; the "###"
//     heading after it (blank lines allowed between) is the block's heading;
//   - a "###" heading not under an anchor starts a new block (Anchor "");
//   - a "#" or "##" heading, or any other one-line HTML comment, ends the
//     current block and is not part of any block;
//   - every other line belongs to the current block, or is stray text.
//
// Under the heading, the line right below it is the meta line when it is
// wrapped in asterisks (in a block without anchor, only if it names an
// importance); the ">" lines right below that (or below the heading) are
// the quote; the rest, after unescaping, is the body. Text written by the
// renderers escapes every line that could be read as structure (see
// doc.go), so entry text cannot break other blocks. Parse fails only on
// input larger than MaxParseBytes or not valid UTF-8.
func Parse(b []byte) (Document, error) {
	if len(b) > MaxParseBytes {
		return Document{}, fmt.Errorf("parse %d bytes (limit %d): %w", len(b), MaxParseBytes, ErrTooLarge)
	}
	lines := splitLines(b)
	for i, l := range lines {
		if !utf8.ValidString(l.text) {
			return Document{}, &LineError{Line: i + 1, Err: ErrNotUTF8}
		}
	}
	var doc Document
	var cur *blockBuilder
	flush := func() {
		if cur != nil {
			doc.Blocks = append(doc.Blocks, cur.finish(b, lines))
			cur = nil
		}
	}
	for i, l := range lines {
		t := strings.TrimLeft(l.text, " \t")
		if kind, id, ok := parseAnchor(t); ok {
			flush()
			cur = &blockBuilder{anchor: kind + ":" + id, first: i, heading: -1}
			continue
		}
		if _, ok := commentInner(t); ok {
			flush()
			continue
		}
		switch headingLevel(t) {
		case 3:
			if cur != nil && cur.anchor != "" && cur.heading < 0 && cur.allBlank(lines) {
				cur.heading, cur.rest = i, nil
				continue
			}
			flush()
			cur = &blockBuilder{first: i, heading: i}
			continue
		case 1, 2:
			flush()
			if headingLevel(t) == 1 && doc.Title == "" {
				doc.Title = headingText(t)
			}
			continue
		}
		if cur != nil {
			cur.rest = append(cur.rest, i)
		} else if s := strings.TrimSpace(l.text); s != "" && !strings.HasPrefix(s, "<!--") {
			doc.Stray = append(doc.Stray, s)
		}
	}
	flush()
	return doc, nil
}

// headingText is the text of an ATX heading line t (already left-trimmed).
func headingText(t string) string {
	return strings.TrimSpace(strings.TrimLeft(t, "#"))
}

type blockBuilder struct {
	anchor  string
	first   int   // index of the first line (anchor or heading)
	heading int   // index of the heading line, -1 if none
	rest    []int // indexes of the lines after the heading (or after the anchor)
}

func (bb *blockBuilder) allBlank(lines []line) bool {
	for _, i := range bb.rest {
		if !isBlank(lines[i].text) {
			return false
		}
	}
	return true
}

func (bb *blockBuilder) finish(b []byte, lines []line) Block {
	blk := Block{Anchor: bb.anchor, Start: lines[bb.first].start, Line: bb.first + 1}
	last := bb.first
	if bb.heading >= 0 {
		blk.HasHeading = true
		blk.Title = headingText(strings.TrimLeft(lines[bb.heading].text, " \t"))
		last = bb.heading
	}
	for _, i := range bb.rest {
		if !isBlank(lines[i].text) {
			last = i
		}
	}
	blk.End = lines[last].end
	blk.Raw = string(b[blk.Start:blk.End])

	rest := bb.rest
	if blk.HasHeading && len(rest) > 0 {
		t := strings.TrimSpace(lines[rest[0]].text)
		if len(t) >= 2 && t[0] == '*' && t[len(t)-1] == '*' {
			inner := strings.TrimSpace(t[1 : len(t)-1])
			if bb.anchor != "" || hasImportance(inner) {
				blk.Meta = inner
				rest = rest[1:]
			}
		}
	}
	if blk.HasHeading {
		var quote []string
		for len(rest) > 0 {
			t := strings.TrimLeft(lines[rest[0]].text, " ")
			if !strings.HasPrefix(t, ">") {
				break
			}
			t = strings.TrimPrefix(t[1:], " ")
			quote = append(quote, t)
			rest = rest[1:]
		}
		blk.Quote = cleanText(strings.Join(quote, "\n"))
	}
	body := make([]string, 0, len(rest))
	for _, i := range rest {
		body = append(body, unescapeLine(lines[i].text))
	}
	blk.Body = cleanText(strings.Join(body, "\n"))
	return blk
}

// ParseEntry reads an entry block back into an Entry, canonical (see
// Canonical): the id from the anchor, the title from the heading, type,
// importance, tags, terms and conflict from the meta line, the description
// from the quote and the content from the body.
//
// A block with a mem: anchor must keep its heading and meta line; a block
// without anchor may have neither (it is a new entry written by hand) and
// then has no type, importance DefaultImportance and status active.
func ParseEntry(b Block) (Entry, error) {
	e := Entry{Title: b.Title, Description: b.Quote, Content: b.Body, Importance: DefaultImportance, Status: StatusActive}
	if b.Anchor != "" {
		kind, id, _ := strings.Cut(b.Anchor, ":")
		if kind != kindMem {
			return Entry{}, &BlockError{Anchor: b.Anchor, Line: b.Line, Err: ErrNotEntry}
		}
		e.ID = id
		if !b.HasHeading {
			return Entry{}, &BlockError{Anchor: b.Anchor, Line: b.Line, Err: ErrNoHeading}
		}
		if b.Meta == "" {
			return Entry{}, &BlockError{Anchor: b.Anchor, Line: b.Line, Err: ErrNoMeta}
		}
	}
	if b.Meta != "" {
		if err := parseMeta(b.Meta, &e); err != nil {
			return Entry{}, &BlockError{Anchor: b.Anchor, Line: b.Line, Err: err}
		}
	}
	return Canonical(e), nil
}
