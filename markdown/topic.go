package markdown

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// maxTopicSlug caps the readable part of a topic file name, in bytes.
const maxTopicSlug = 64

// windowsReserved are device names Windows will not open as files, with
// any extension.
var windowsReserved = []string{"con", "prn", "aux", "nul",
	"com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
	"lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9"}

// TopicFile returns the file name of a topic's knowledge file, such as
// "go-tooling.md" for "Go tooling"; the caller puts it under knowledge/.
//
// The name is portable on every file system and in every tool: ASCII
// letters (lower-cased) and digits, runs of spaces, tabs, "-" and "_"
// become one "-", at most 64 bytes before the suffix, never empty, never
// "." or "..", no slash. Non-ASCII text (CJK included) is not kept: Windows
// code pages, zip tools, git's quoted paths and macOS's normalization
// mangle it. Whenever something other than case and separators is lost
// (another character, a cut at 64 bytes), or the slug would be empty or a
// Windows device name, "-" and 8 hex digits of sha256 of the trimmed topic
// are appended, so two topics that differ in more than case and separators
// never share a file. "数据库" gives "topic-<hash>.md"; index.md maps the
// topic's name to it. Part of the on-disk format; do not change.
func TopicFile(topic string) string {
	t := strings.TrimSpace(strings.ToValidUTF8(topic, "\uFFFD"))
	var b strings.Builder
	lossy, sep := false, false
	for _, r := range t {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r == ' ' || r == '\t' || r == '-' || r == '_':
			sep = true
			continue
		default:
			lossy, sep = true, true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	slug := b.String()
	if len(slug) > maxTopicSlug {
		slug, lossy = strings.TrimRight(slug[:maxTopicSlug], "-"), true
	}
	if lossy || slug == "" || slices.Contains(windowsReserved, slug) {
		sum := sha256.Sum256([]byte(t))
		h := hex.EncodeToString(sum[:4])
		if slug == "" {
			slug = "topic-" + h
		} else {
			slug += "-" + h
		}
	}
	return slug + ".md"
}
