package tokenize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxToken bounds the byte length of a token. A longer segment (a base64
// blob, a minified line) is cut at the last rune boundary before it; a longer
// compound is not emitted at all, since its segments already cover it.
// Index and query share this code, so a cut is the same on both sides.
const maxToken = 128

// class is what a rune is to the tokenizer.
type class uint8

const (
	sep  class = iota // ends any token
	word              // letter or number outside the CJK-like scripts
	cjk               // letter or number of Han, kana, Hangul, Bopomofo
	mark              // combining mark: dropped without ending a token
	conn              // ASCII punctuation that joins segments into a compound
)

// asciiClass classifies the ASCII range; connector punctuation is what
// joins identifiers, paths, dotted names, dates and e-mail addresses.
var asciiClass = func() (t [128]class) {
	for r := range t {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			t[r] = word
		case strings.ContainsRune(`_-./\:@'`, rune(r)):
			t[r] = conn
		}
	}
	return t
}()

func classOf(r rune) class {
	if r < utf8.RuneSelf {
		return asciiClass[r]
	}
	if 0x4E00 <= r && r <= 0x9FFF { // the common case of non-ASCII text: Han
		return cjk
	}
	if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Mc, r) {
		return mark
	}
	if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
		return sep
	}
	if !indexable(r) {
		return sep
	}
	if isCJK(r) {
		return cjk
	}
	return word
}

// isCJK reports whether letter or number r belongs to a script written
// without spaces between words (or, for Hangul, one the index treats the
// same way): such runs are indexed as overlapping character bigrams.
func isCJK(r rune) bool {
	switch {
	case 0x4E00 <= r && r <= 0x9FFF, // CJK Unified Ideographs
		0x3040 <= r && r <= 0x30FF, // Hiragana, Katakana (incl. ー U+30FC)
		0xAC00 <= r && r <= 0xD7A3: // Hangul syllables
		return true
	case r == 0x3005 || r == 0x3006 || r == 0x3007: // 々 〆 〇
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Bopomofo)
}

// Tokens returns the normalized tokens of s in text order, duplicates kept
// (they are term frequencies to FTS5). See the package documentation for
// the rules.
func Tokens(s string) []string {
	var t tokenizer
	t.run(s)
	return t.out
}

// IndexText returns the tokens of s joined by single spaces: the text to
// store in an FTS5 column declared with tokenize='unicode61' (or 'ascii'),
// under which each of our tokens is exactly one FTS5 token.
func IndexText(s string) string {
	return strings.Join(Tokens(s), " ")
}

// Terms returns the distinct tokens of s in first-seen order.
func Terms(s string) []string {
	toks := Tokens(s)
	seen := make(map[string]struct{}, len(toks))
	out := toks[:0]
	for _, t := range toks {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

// A Scanner tokenizes many texts one after another without allocating
// per token: it hands each token to a callback in a buffer it reuses. It
// yields exactly the tokens Tokens returns, in the same order. A Scanner
// is not safe for concurrent use; its zero value is ready.
type Scanner struct{ t tokenizer }

// Scan calls fn with each token of s, in text order, duplicates kept.
// tok is valid only during the call: copy it (string(tok)) to keep it.
// A map lookup m[string(tok)] does not allocate.
func (sc *Scanner) Scan(s string, fn func(tok []byte)) {
	sc.t.fn = fn
	sc.t.run(s)
	sc.t.fn = nil
}

// tokenizer holds the scratch buffers of one Tokens call, or of a
// Scanner across calls.
type tokenizer struct {
	rs     []rune   // normalized input, original case
	seg    []rune   // current compound with marks removed
	bounds []int    // end offsets of the segments within seg
	cut    []int    // part boundaries of the current segment
	b      []byte   // fold buffer
	out    []string // tokens, when fn is nil
	fn     func(tok []byte)
}

func (t *tokenizer) run(s string) {
	if cap(t.rs) < len(s) {
		t.rs = make([]rune, 0, len(s))
	}
	t.rs = t.rs[:0]
	for _, r := range s {
		t.rs = normalizeRune(t.rs, r)
	}
	rs := t.rs
	for i := 0; i < len(rs); {
		switch classOf(rs[i]) {
		case cjk:
			t.seg = t.seg[:0]
			for ; i < len(rs); i++ {
				c := classOf(rs[i])
				if c == cjk {
					t.seg = append(t.seg, rs[i])
				} else if c != mark {
					break
				}
			}
			t.emitCJK(t.seg)
		case word:
			t.seg, t.bounds = t.seg[:0], t.bounds[:0]
			for {
				for ; i < len(rs); i++ {
					c := classOf(rs[i])
					if c == word {
						t.seg = append(t.seg, rs[i])
					} else if c != mark {
						break
					}
				}
				t.bounds = append(t.bounds, len(t.seg))
				j := i
				for j < len(rs) && classOf(rs[j]) == conn {
					j++
				}
				if j == i || j == len(rs) || classOf(rs[j]) != word {
					break
				}
				i = j
			}
			t.emitWord(t.seg, t.bounds)
		default:
			i++
		}
	}
}

// emitCJK emits the bigrams of a CJK-like run, or the run itself when it is
// a single character.
func (t *tokenizer) emitCJK(run []rune) {
	if len(run) == 1 {
		t.emit(run, false)
		return
	}
	for k := 0; k+1 < len(run); k++ {
		t.emit(run[k:k+2], false)
	}
}

// emitWord emits a compound (segments joined by connector punctuation):
// the whole compound when it has more than one segment, then each segment,
// each followed by its camelCase/letter-digit parts when it has more than
// one.
func (t *tokenizer) emitWord(all []rune, bounds []int) {
	if len(bounds) > 1 {
		t.emit(all, true)
	}
	start := 0
	for _, end := range bounds {
		seg := all[start:end]
		start = end
		t.emit(seg, false)
		t.cut = splitParts(t.cut[:0], seg)
		p := 0
		for _, c := range t.cut {
			t.emit(seg[p:c], false)
			p = c
		}
		if len(t.cut) > 0 {
			t.emit(seg[p:], false)
		}
	}
}

// emit appends the case-folded form of rs as a token (or, with a Scanner,
// hands it to fn). An over-long token is dropped when dropLong is set and
// cut to maxToken bytes otherwise.
func (t *tokenizer) emit(rs []rune, dropLong bool) {
	t.b = t.b[:0]
	for _, r := range rs {
		if r < utf8.RuneSelf { // the common case, without RuneLen and AppendRune
			if len(t.b) == maxToken {
				if dropLong {
					return
				}
				break
			}
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			t.b = append(t.b, byte(r))
			continue
		}
		r = fold(r)
		if len(t.b)+utf8.RuneLen(r) > maxToken {
			if dropLong {
				return
			}
			break
		}
		t.b = utf8.AppendRune(t.b, r)
	}
	if len(t.b) == 0 {
		return
	}
	if t.fn != nil {
		t.fn(t.b)
		return
	}
	t.out = append(t.out, string(t.b))
}

// splitParts returns the cut points that split a segment into parts at
// lower→Upper ("parse|Request"), at the last capital of a capital run
// followed by a lowercase letter ("HTTP|Request") and at letter↔number
// changes ("sha|256"), appended to cut. None means the segment is a
// single part.
func splitParts(cut []int, seg []rune) []int {
	for j := 1; j < len(seg); j++ {
		prev, cur := seg[j-1], seg[j]
		switch {
		case isNumber(prev) != isNumber(cur):
		case isLower(prev) && isUpper(cur):
		case isUpper(prev) && isUpper(cur) && j+1 < len(seg) && isLower(seg[j+1]):
		default:
			continue
		}
		cut = append(cut, j)
	}
	return cut
}

// isNumber, isLower and isUpper are unicode's, with ASCII answered first.
func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isLower(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.IsLower(r)
}

func isUpper(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.IsUpper(r)
}
