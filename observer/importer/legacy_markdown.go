package importer

// The dsh-memory Markdown tree: facts and session days.

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/distill"
)

// headingTypes name the entry type of the facts under a heading, tried in
// this order against the nearest heading first, then its parents.
var headingTypes = []struct {
	typ string
	re  *regexp.Regexp
}{
	{payload.TypeProcedure, regexp.MustCompile(`(?i)\bprocedures?\b|\bhow[ -]?to\b|\bsteps\b|\bworkflows?\b|\brunbooks?\b|步骤|流程|操作`)},
	{payload.TypeFix, regexp.MustCompile(`(?i)\bfix(es|ed)?\b|\bbugs?\b|\bpitfalls?\b|\bgotchas?\b|\btroubleshooting\b|修复|踩坑|坑|故障`)},
	{payload.TypeRule, regexp.MustCompile(`(?i)\brules?\b|\bconventions?\b|\bguidelines?\b|规则|约定|规范`)},
	{payload.TypeDecision, regexp.MustCompile(`(?i)\bdecisions?\b|\bdecided\b|决定|决策`)},
	{payload.TypeArchitecture, regexp.MustCompile(`(?i)\barchitecture\b|\bdesign\b|架构|设计`)},
	{payload.TypePreference, regexp.MustCompile(`(?i)\bprefer(s|red|ences?)?\b|偏好|喜好|习惯`)},
}

var (
	dateRE       = regexp.MustCompile(`\b(\d{4}-\d{2}-\d{2})\b`)
	headingRE    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$`)
	bulletRE     = regexp.MustCompile(`^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$`)
	ruleRE       = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
	checkboxRE   = regexp.MustCompile(`^\[[ xX]\][ \t]+`)
	boldTitleRE  = regexp.MustCompile(`^\*\*([^*\n]+)\*\*[ \t]*[:：—–-]?[ \t]*\S`)
	indexLinkRE  = regexp.MustCompile(`^\[[^\]]*\]\([^)]*\.md(#[^)]*)?\)`)
	fenceRE      = regexp.MustCompile("^ {0,3}(```|~~~)")
	htmlLineRE   = regexp.MustCompile(`^\s*<!--.*-->\s*$`)
	sessionDayRE = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})\.md$`)
)

// mdBlock is one fact of a legacy Markdown file: a list item with its
// continuation lines and nested items, or a paragraph.
type mdBlock struct {
	headings []string // the heading path, outermost first
	text     string
	bullet   bool
}

// parseLegacyMarkdown cuts a legacy Markdown file into facts: every
// top-level list item (with its continuation lines and nested items) and
// every paragraph is one block, under the headings above it. Front matter,
// single-line HTML comments and thematic breaks are left out; fenced code
// belongs to the block it follows.
func parseLegacyMarkdown(b []byte) []mdBlock {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(b, []byte("\uFEFF"))), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) == "---" {
		for i := 1; i < len(lines); i++ {
			if t := strings.TrimSpace(lines[i]); t == "---" || t == "..." {
				lines = lines[i+1:]
				break
			}
		}
	}
	var out []mdBlock
	var headings []string
	var cur *mdBlock
	var body []string
	contentCol, blankSeen, inFence := 0, false, false
	flush := func() {
		if cur != nil {
			cur.text = strings.TrimSpace(strings.Join(body, "\n"))
			if cur.text != "" {
				out = append(out, *cur)
			}
		}
		cur, body, blankSeen = nil, nil, false
	}
	start := func(bullet bool, first string, col int) {
		flush()
		cur = &mdBlock{headings: append([]string(nil), headings...), bullet: bullet}
		body = []string{first}
		contentCol = col
	}
	for _, line := range lines {
		line = strings.TrimRight(line, " \t")
		if inFence || fenceRE.MatchString(line) {
			if fenceRE.MatchString(line) {
				inFence = !inFence
			}
			if cur == nil {
				start(false, line, 0)
			} else {
				if blankSeen {
					body = append(body, "")
					blankSeen = false
				}
				body = append(body, mdDedent(line, contentCol))
			}
			continue
		}
		if htmlLineRE.MatchString(line) {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			flush()
			level := len(m[1])
			for len(headings) < level {
				headings = append(headings, "")
			}
			headings = append(headings[:level-1], strings.TrimSpace(m[2]))
			continue
		}
		if ruleRE.MatchString(line) {
			flush()
			continue
		}
		if line == "" {
			if cur != nil && !cur.bullet {
				flush()
			} else {
				blankSeen = true
			}
			continue
		}
		indent := mdIndent(line)
		if m := bulletRE.FindStringSubmatch(line); m != nil {
			if indent < 2 || cur == nil || !cur.bullet {
				item := checkboxRE.ReplaceAllString(m[3], "")
				start(true, item, len(m[1])+len(m[2])+1)
				continue
			}
			body = append(body, mdDedent(line, contentCol))
			continue
		}
		switch {
		case cur != nil && cur.bullet && (!blankSeen || indent >= 2):
			if blankSeen {
				body = append(body, "")
				blankSeen = false
			}
			body = append(body, mdDedent(line, contentCol))
		case cur != nil && !cur.bullet:
			body = append(body, strings.TrimSpace(line))
		default:
			start(false, strings.TrimSpace(line), 0)
		}
	}
	flush()
	return out
}

// mdIndent counts leading white space, a tab as 4 columns.
func mdIndent(line string) int {
	n := 0
	for _, c := range line {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

// mdDedent removes up to col columns of leading spaces (the list item's
// content column), keeping deeper indentation (nested items, code).
func mdDedent(line string, col int) string {
	i := 0
	for i < len(line) && i < col && line[i] == ' ' {
		i++
	}
	if i < len(line) && line[i] == '\t' && i < col {
		i++
	}
	return line[i:]
}

// firstISODate finds the first valid YYYY-MM-DD in s.
func firstISODate(s string) (time.Time, bool) {
	for _, m := range dateRE.FindAllString(s, -1) {
		if t, err := time.Parse("2006-01-02", m); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// fileDate is the time of a file's undated facts: the first date in its
// name, else in its text, else legacyEpoch.
func fileDate(rel string, b []byte) string {
	if t, ok := firstISODate(path.Base(rel)); ok {
		return t.UTC().Format(envelopeTime)
	}
	if t, ok := firstISODate(string(b)); ok {
		return t.UTC().Format(envelopeTime)
	}
	return legacyEpoch
}

// topicTag names the file a fact came from: "postgres" for
// knowledge/postgres.md, "project:dshmem" for projects/dshmem.md or
// projects/dshmem/notes.md, "tool:rg" for tools/rg.md; "" for global.md
// and index.md.
func topicTag(rel string) string {
	parts := strings.Split(rel, "/")
	if len(parts) < 2 {
		return ""
	}
	name := strings.TrimSuffix(parts[1], ".md")
	switch parts[0] {
	case "knowledge":
		return strings.TrimSuffix(strings.Join(parts[1:], "/"), ".md")
	case "projects":
		return "project:" + name
	case "tools":
		return "tool:" + name
	}
	return ""
}

func headingType(headings []string) string {
	for i := len(headings) - 1; i >= 0; i-- {
		for _, ht := range headingTypes {
			if headings[i] != "" && ht.re.MatchString(headings[i]) {
				return ht.typ
			}
		}
	}
	return payload.DefaultEntryType
}

func nearestHeading(headings []string) string {
	for i := len(headings) - 1; i >= 0; i-- {
		if headings[i] != "" {
			return headings[i]
		}
	}
	return ""
}

func markdownFacts(rel string, b []byte) LegacyFile {
	f := LegacyFile{Path: rel, Layout: LegacyDSHMemory}
	if !utf8.Valid(b) {
		f.Err = fmt.Errorf("read %s: not UTF-8 text", rel)
		return f
	}
	undated := fileDate(rel, b)
	topic := topicTag(rel)
	for _, blk := range parseLegacyMarkdown(b) {
		if rel == "index.md" && blk.bullet && indexLinkRE.MatchString(blk.text) {
			// A line of the index that points at a topic file: the file
			// itself is imported, its description here is not a fact.
			f.Skipped = addCounts(f.Skipped, map[string]int{"index link": 1})
			continue
		}
		heading := nearestHeading(blk.headings)
		d := payload.Remember{
			Content: blk.text,
			Type:    headingType(blk.headings),
			Tags:    presentStrings(topic, clipTag(heading, 60)),
			Legacy:  &payload.LegacyMeta{Source: rel, Heading: strings.Join(presentStrings(blk.headings...), " / ")},
		}
		if m := boldTitleRE.FindStringSubmatch(blk.text); m != nil {
			d.Title = strings.TrimSpace(m[1])
		}
		t := undated
		if day, ok := firstISODate(blk.text); ok {
			t = day.UTC().Format(envelopeTime)
		}
		f.Events = append(f.Events, legacyEnvelope(legacyID(rel, blk.text), observer.GlobalStream, t, d))
	}
	return f
}

func presentStrings(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// clipTag cuts a heading used as a tag to n runes.
func clipTag(s string, n int) string {
	if c := distill.TruncateRunes(s, n); c != s {
		return strings.TrimSpace(c)
	}
	return s
}

// ---- dsh-memory: session days ----

// sessionDay maps sessions/…/YYYY-MM-DD.md: each section becomes a
// compaction/summary on the global stream with compactionId
// "legacy:<file>:<n>" (n from 0 in file order) and time = that day at
// 00:00Z + n seconds (the day of the file name, else the first date in
// the file, else 1970-01-01).
func sessionDay(rel string, b []byte) LegacyFile {
	f := LegacyFile{Path: rel, Layout: LegacyDSHMemory}
	if !utf8.Valid(b) {
		f.Err = fmt.Errorf("read %s: not UTF-8 text", rel)
		return f
	}
	day, _ := time.Parse(envelopeTime, fileDate(rel, b))
	if !sessionDayRE.MatchString(path.Base(rel)) {
		f.Notes = append(f.Notes, fmt.Sprintf("file name is not YYYY-MM-DD.md; its sections are dated %s", day.Format("2006-01-02")))
	}
	for n, sec := range sessionSections(b) {
		cid := "legacy:" + rel + ":" + strconv.Itoa(n)
		t := day.Add(time.Duration(n) * time.Second).UTC().Format(envelopeTime)
		f.Events = append(f.Events, legacyEnvelope(legacyID(rel, cid+"\n"+sec), observer.GlobalStream, t,
			payload.CompactionSummary{CompactionID: cid, Text: sec, LegacySource: rel}))
	}
	return f
}

// sessionSections cuts a session day file at its headings of the
// shallowest level below the title (a level-1 heading on the first
// non-blank line, which is dropped). Text before the first such heading
// is a section of its own; a file with no such heading is one section.
func sessionSections(b []byte) []string {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(b, []byte("\uFEFF"))), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil && len(m[1]) == 1 {
			lines = lines[i+1:]
		}
		break
	}
	level, inFence := 7, false
	for _, l := range lines {
		if fenceRE.MatchString(l) {
			inFence = !inFence
		}
		if m := headingRE.FindStringSubmatch(l); m != nil && !inFence {
			level = min(level, len(m[1]))
		}
	}
	var secs []string
	var cur []string
	emit := func() {
		if s := strings.TrimSpace(strings.Join(cur, "\n")); s != "" {
			secs = append(secs, s)
		}
		cur = nil
	}
	inFence = false
	for _, l := range lines {
		if fenceRE.MatchString(l) {
			inFence = !inFence
		}
		if m := headingRE.FindStringSubmatch(l); m != nil && !inFence && len(m[1]) == level {
			emit()
		}
		cur = append(cur, strings.TrimRight(l, " \t"))
	}
	emit()
	return secs
}
