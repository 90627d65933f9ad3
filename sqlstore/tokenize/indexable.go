package tokenize

// unicode61Gaps lists the runes Go's unicode tables (Unicode 15) call
// letters or numbers but SQLite's unicode61 tokenizer (its tables are older:
// these were combining marks there) treats as separators. Emitting one
// inside a token would let unicode61 split the token in two, so the
// tokenizer treats them as separators too. TestClassesAgreeWithUnicode61
// re-derives the list against the linked SQLite.
var unicode61Gaps = [...][2]rune{
	{0x19B0, 0x19C0}, // New Tai Lue vowel signs
	{0x19C8, 0x19C9}, // New Tai Lue tone marks
	{0x1CF2, 0x1CF3}, // Vedic signs ardhavisarga, rotated ardhavisarga
}

// indexable reports whether unicode61 keeps letter-or-number r inside a token.
func indexable(r rune) bool {
	for _, g := range unicode61Gaps {
		if g[0] <= r && r <= g[1] {
			return false
		}
	}
	return true
}
