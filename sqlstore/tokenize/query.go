package tokenize

import "strings"

// Quote makes term an FTS5 string: in double quotes, a quote inside
// doubled. Recall probes each query token with MATCH Quote(token).
func Quote(term string) string {
	return `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
}
