package tokenize

import "unicode"

// halfwidthKatakana maps U+FF61..U+FF9F to their full-width forms, in order.
// U+FF9E and U+FF9F (the half-width voiced and semi-voiced marks) map to the
// combining marks U+3099 and U+309A, which the tokenizer drops; normalizeRune
// composes them onto a preceding kana instead when a precomposed form exists,
// as NFKC does.
var halfwidthKatakana = []rune("。「」、・ヲァィゥェォャュョッーアイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワン\u3099\u309a")

// normalizeRune applies the part of NFKC that matters for search over
// Chinese, Japanese, Korean and code-flavoured English text. It returns the
// replacement runes (usually one) for r, appended to dst.
//
//   - U+FF01..U+FF5E (full-width ASCII) -> U+0021..U+007E
//   - U+3000 (ideographic space) and every other Unicode space -> U+0020
//   - U+FF61..U+FF9F (half-width katakana and CJK punctuation) -> full-width
//   - U+FB00..U+FB06 (Latin ligatures ff, fi, fl, ffi, ffl, st) -> letters
//
// Case is left alone: camelCase splitting needs it; folding comes later.
func normalizeRune(dst []rune, r rune) []rune {
	switch {
	case r < 0x80:
		return append(dst, r)
	case r >= 0xFF01 && r <= 0xFF5E:
		return append(dst, r-0xFEE0)
	case r >= 0xFF61 && r <= 0xFF9F:
		k := halfwidthKatakana[r-0xFF61]
		if (r == 0xFF9E || r == 0xFF9F) && len(dst) > 0 {
			if c, ok := composeKana(dst[len(dst)-1], r == 0xFF9F); ok {
				dst[len(dst)-1] = c
				return dst
			}
		}
		return append(dst, k)
	case r >= 0xFB00 && r <= 0xFB06:
		return append(dst, []rune(ligatures[r-0xFB00])...)
	case unicode.IsSpace(r):
		return append(dst, ' ')
	}
	return append(dst, r)
}

var ligatures = [...]string{"ff", "fi", "fl", "ffi", "ffl", "st", "st"}

// composeKana returns the precomposed voiced (dakuten) or semi-voiced
// (handakuten) form of a full-width katakana base, as NFKC composition of
// base + U+3099/U+309A would.
func composeKana(base rune, semi bool) (rune, bool) {
	if semi {
		if base >= 'ハ' && base <= 'ホ' && (base-'ハ')%3 == 0 {
			return base + 2, true
		}
		return 0, false
	}
	switch {
	case base == 'ウ':
		return 'ヴ', true
	case base >= 'カ' && base <= 'ヂ' && (base-'カ')%2 == 0:
		// カ..チ: voiced form is the next code point (カガキギ…チヂ).
		return base + 1, true
	case base >= 'ツ' && base <= 'ト' && (base-'ツ')%2 == 0:
		// ツ..ト: the small ッ sits before ツ, so the pairs restart (ツヅテデトド).
		return base + 1, true
	case base >= 'ハ' && base <= 'ホ' && (base-'ハ')%3 == 0:
		return base + 1, true
	case base == 'ワ':
		return 'ヷ', true
	case base == 'ヲ':
		return 'ヺ', true
	}
	return 0, false
}

// fold maps r to its case-folded form: lower(upper(r)), so the members of a
// simple case-folding orbit that plain ToLower leaves apart (ſ and s, ς and
// σ, K and the Kelvin sign) end up as one rune.
func fold(r rune) rune {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	if 0x3040 <= r && r <= 0x9FFF || 0xAC00 <= r && r <= 0xD7A3 {
		return r // kana, CJK ideographs, Hangul syllables: no case (TestFoldFastPath)
	}
	return unicode.ToLower(unicode.ToUpper(r))
}
