package encoder

import "unicode"

// English reports whether the encoder should speak for text: it has
// letters, and fewer than a fifth of them are Han, Kana or Hangul. The
// model is English only (near random on Chinese: MADial zh R@10 0.168),
// so a text of another script gets no vector and a query of another
// script no dense score; recall then ranks exactly as without the model.
// Latin names in a Chinese text, or a Chinese word in an English one, do
// not change the verdict.
func English(text string) bool {
	letters, cjk := 0, 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			cjk++
		}
	}
	return letters > 0 && cjk*5 < letters
}
