package markdown

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// stampLine matches what is left of a timestamp-only line once its
// decoration is removed: a date or time alone, or a label such as
// "updated", "last updated at", "generated", "更新于" followed by one.
var stampLine = regexp.MustCompile(`(?i)^(?:(?:last\s+)?(?:updated|modified|generated|created|saved|synced|rendered|timestamp|date|time|as\s+of)(?:\s+(?:at|on))?|最后更新(?:时间|于)?|更新(?:时间|于)|生成(?:时间|于)|创建(?:时间|于)|修改(?:时间|于)|时间|日期)?\s*[:：]?\s*` +
	`(?:` +
	`(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{4}年\d{1,2}月\d{1,2}日)(?:(?:T|\s+)\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?` +
	`|\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?` +
	`)(?:\s*(?:Z|[+-]\d{2}:?\d{2}|UTC|GMT))?$`)

// StripTimestamps drops the lines of b that are only a timestamp, so the
// stable layer hashes the same when nothing but a time changed. A line is
// dropped when, after removing list and quote markers, emphasis, brackets
// and an enclosing one-line HTML comment, what is left is
//
//   - a date, a date and time, or a time ("2026-08-18", "2026/8/18 10:00",
//     "2026-08-18T10:00:00.123Z", "2026年8月18日", "10:00:00 UTC"), or
//   - one of the labels updated, modified, generated, created, saved,
//     synced, rendered, timestamp, date, time, as of (optionally with
//     "last" before and "at"/"on" after) or 更新于, 更新时间, 最后更新,
//     生成于, 生成时间, 创建于, 创建时间, 修改于, 修改时间, 时间, 日期,
//     then an optional ":" or "：", then such a timestamp — and nothing else.
//
// A line with any other word ("Updated 2026-08-18 by Ann", "released in
// 2026") is kept. Blank lines left doubled by a drop are collapsed into
// one. Line ends (\n or \r\n) of kept lines are kept.
func StripTimestamps(b []byte) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	lastBlank, skipBlank := true, false
	for _, l := range lines {
		if l == "" {
			continue
		}
		body := strings.TrimRight(l, "\r\n")
		if strings.TrimSpace(body) == "" {
			if skipBlank && lastBlank {
				continue
			}
			out.WriteString(l)
			lastBlank = true
			continue
		}
		if isStampLine(body) {
			skipBlank = true
			continue
		}
		out.WriteString(l)
		lastBlank, skipBlank = false, false
	}
	return []byte(out.String())
}

func isStampLine(s string) bool {
	t := strings.TrimSpace(s)
	if inner, ok := commentInner(t); ok {
		t = strings.TrimSpace(inner)
	}
	t = strings.TrimLeft(t, "-+*> \t")
	t = strings.Trim(t, "*_`()[] \t")
	return t != "" && stampLine.MatchString(t)
}

// truncNote is appended by Truncate; %d is the original length in characters.
const truncNote = "[注：原文 %d 字符已截断]"

// Truncate returns s unchanged when it has at most maxChars characters
// (runes; an invalid byte counts as one). Otherwise it keeps the first
// maxChars characters, cut at a rune boundary, and appends a line break
// (unless the kept text is empty or already ends in one) and the note
// "[注：原文 X 字符已截断]" with X the length of s in characters. The note
// and its line break count toward nothing: the result may be longer than
// maxChars by their length.
func Truncate(s string, maxChars int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if n <= maxChars {
		return s, false
	}
	kept, _ := cutRunes(s, max(maxChars, 0))
	sep := "\n"
	if kept == "" || strings.HasSuffix(kept, "\n") {
		sep = ""
	}
	return kept + sep + fmt.Sprintf(truncNote, n), true
}
