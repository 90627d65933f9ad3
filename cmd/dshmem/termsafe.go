package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// printsStoredText names the commands whose output holds text from the
// log (what users, tools and models wrote): their stdout goes through
// termSafe, so an escape sequence in an event cannot move the cursor,
// retitle the terminal or hide text. restore and the other commands that
// write a file's bytes are left out: their output must be exact.
var printsStoredText = map[string]bool{
	"search": true, "recall": true, "entries": true, "history": true, "show": true,
	"stats": true, "scopes": true, "sql": true, "checkpoint": true, "import": true,
}

// termSafe wraps w so that control characters reach it escaped: C0
// controls other than tab and newline (ESC, CR, BEL, backspace, …), DEL,
// C1 controls (U+0080–U+009F, which some terminals take as CSI) and the
// bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069)
// become \uXXXX; bytes that are not UTF-8 become \xHH. JSON that
// encoding/json wrote passes unchanged in meaning: it holds no raw C0
// byte, and \uXXXX inside a JSON string is the same character.
func termSafe(w io.Writer) io.Writer { return &safeWriter{w: w} }

type safeWriter struct {
	w    io.Writer
	tail []byte // the start of a rune split across writes
	buf  []byte
}

func (s *safeWriter) Write(p []byte) (int, error) {
	n := len(p)
	in := p
	if len(s.tail) > 0 {
		in = append(s.tail, p...)
		s.tail = nil
	}
	s.buf = s.buf[:0]
	for i := 0; i < len(in); {
		c := in[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				s.buf = fmt.Appendf(s.buf, `\u%04x`, c)
			} else {
				s.buf = append(s.buf, c)
			}
			i++
			continue
		}
		if !utf8.FullRune(in[i:]) {
			s.tail = append([]byte(nil), in[i:]...)
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			s.buf = fmt.Appendf(s.buf, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			s.buf = fmt.Appendf(s.buf, `\u%04x`, r)
		default:
			s.buf = append(s.buf, in[i:i+size]...)
		}
		i += size
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return 0, err
	}
	return n, nil
}
