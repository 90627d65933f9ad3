package markdown

import "unicode/utf8"

// CutUTF8 returns the longest prefix of s of at most n bytes (n ≥ 0) that
// ends on a rune boundary. It is the one cut of text to a byte budget:
// summaries here, recall results, packets and oversized events elsewhere.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
