package distill

import (
	"regexp"
	"strings"
)

// split cuts a message into statements: at line ends, at 。！？!? and at a
// '.' followed by white space or the end. ';' and '—' do not cut ("not
// MySQL — PostgreSQL" is one statement), nor does '，'. A question (ending
// in ? or ？, or in 吗) is dropped: asking is not telling. Leading fillers
// ("OK, ", "also ", "好的，", "另外") are removed. Each statement returned
// is verbatim text of the message, so a quote of it is too.
func split(text string) []string {
	var out []string
	start := 0
	emit := func(end int, term rune) {
		s := strings.TrimSpace(text[start:end])
		start = end
		if term == '?' || term == '？' {
			return
		}
		s = strings.TrimRight(s, " .。!！")
		s = stripFillers(s)
		if s == "" || strings.HasSuffix(s, "吗") || strings.HasSuffix(s, "?") {
			return
		}
		out = append(out, s)
	}
	rs := []rune(text)
	pos := 0
	for i, r := range rs {
		size := len(string(r))
		switch r {
		case '\n', '。', '！', '？', '!', '?':
			emit(pos, r)
			start = pos + size
		case '.':
			// Not in an ellipsis or a path ("./...", "wait... ok").
			if i > 0 && (rs[i-1] == '.' || rs[i-1] == '/') {
				break
			}
			if i+1 == len(rs) || rs[i+1] == ' ' || rs[i+1] == '\t' || rs[i+1] == '\n' {
				emit(pos, r)
				start = pos + size
			}
		}
		pos += size
	}
	emit(len(text), 0)
	return out
}

var fillerRe = regexp.MustCompile(`^(?i:(?:ok(?:ay)?|also|and|so|btw|by\s+the\s+way|hey|fyi|for\s+the\s+record|well)\s*[,:]?\s+)+|^(?:(?:好的|好|另外|还有|对了|顺便说一下|注意|嗯|哦)\s*[，,：:\s]\s*)+`)

func stripFillers(s string) string {
	return strings.TrimSpace(fillerRe.ReplaceAllString(s, ""))
}
