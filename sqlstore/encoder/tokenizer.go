package encoder

import (
	"encoding/json"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// Tokenizer splits text into SentencePiece unigram pieces by Viterbi over
// the piece scores of vocab.json, exactly as @energetic-ai/embeddings (a
// copy of @tensorflow-models/universal-sentence-encoder's tokenizer) does,
// quirks included, because the model was used with those ids:
//
//   - NFKC, then "▁" before the text and in place of every U+0020 (tabs
//     and newlines stay, and are unknown pieces).
//   - A position no piece starts at gets the unknown piece (id 0, score 0,
//     one code point). Runs of unknown pieces are merged into one.
//   - Ties go to the later candidate (score >= best), and an end position
//     whose best is exactly 0 takes any candidate.
//   - The backward pass steps by the piece's length in UTF-16 units (the
//     JavaScript string length), the lattice by code points.
//
// A Tokenizer is safe for concurrent use; Encode's scratch is per call.
type Tokenizer struct {
	pieces  map[string]int32 // piece → id, ids ≥ reserved only
	scores  []float64        // by id
	utf16   []int32          // piece length in UTF-16 units, by id
	maxRune int              // longest piece, in code points
}

// reserved ids (unknown, <s>, </s>, three extra) are never matched.
const reservedPieces = 6

// ParseVocab reads vocab.json: a JSON array of [piece, score] pairs.
func ParseVocab(b []byte) (*Tokenizer, error) {
	var raw [][2]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse vocab.json: %w", err)
	}
	t := &Tokenizer{pieces: make(map[string]int32, len(raw)), scores: make([]float64, len(raw)), utf16: make([]int32, len(raw))}
	for i, e := range raw {
		p, ok1 := e[0].(string)
		s, ok2 := e[1].(float64)
		if e[1] == nil { // a few pieces (":") have a null score: JavaScript adds it as 0
			ok2 = true
		}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("parse vocab.json: entry %d is not [string, number]", i)
		}
		t.scores[i] = s
		t.utf16[i] = int32(len(utf16.Encode([]rune(p))))
		if i < reservedPieces {
			continue
		}
		t.pieces[p] = int32(i) // a repeated piece: the last wins, as in the JavaScript trie
		if n := len([]rune(p)); n > t.maxRune {
			t.maxRune = n
		}
	}
	if len(raw) <= reservedPieces {
		return nil, fmt.Errorf("parse vocab.json: %d entries, want more than %d", len(raw), reservedPieces)
	}
	return t, nil
}

// Len is the vocabulary size.
func (t *Tokenizer) Len() int { return len(t.scores) }

// tokScratch holds the buffers of one Encode call, reused by an Encoder.
type tokScratch struct {
	runes []rune
	buf   []byte
	best  []float64
	words []int32
	out   []int32
}

// Encode returns the piece ids of text.
func (t *Tokenizer) Encode(text string) []int32 {
	var s tokScratch
	return append([]int32(nil), t.encode(&s, text)...)
}

const separator = '▁'

// encode tokenizes into s.out and returns it (valid until the next call).
func (t *Tokenizer) encode(s *tokScratch, text string) []int32 {
	s.runes = nfkc(s.runes[:0], text)
	if len(s.runes) > 0 {
		s.runes = append(s.runes, 0)
		copy(s.runes[1:], s.runes)
		s.runes[0] = separator
		for i, r := range s.runes {
			if r == ' ' {
				s.runes[i] = separator
			}
		}
	}
	sym := s.runes
	n := len(sym)
	s.best = growF(s.best, n+1)
	s.words = growI(s.words, n+1)
	best, words := s.best, s.words
	// JavaScript visits end positions in order and, for each, start
	// positions in ascending order; every (start, end) holds one piece.
	// Visiting start positions in order and relaxing forward edges gives
	// the same sequence of comparisons per end position, because best[i]
	// is final once every edge ending at i has been seen.
	for i := 0; i < n; i++ {
		matched := false
		s.buf = s.buf[:0]
		for l := 1; l <= t.maxRune && i+l <= n; l++ {
			s.buf = appendRune(s.buf, sym[i+l-1])
			id, ok := t.pieces[string(s.buf)] // no allocation: map lookup by converted bytes
			if !ok {
				continue
			}
			matched = true
			relax(best, words, i+l, t.scores[id]+best[i], id)
		}
		if !matched {
			relax(best, words, i+1, 0+best[i], 0)
		}
	}
	out := s.out[:0]
	for it := n; it > 0; {
		out = append(out, words[it])
		it -= int(t.utf16[words[it]])
	}
	// Merge runs of unknown pieces, then reverse.
	w := 0
	prevUnk := false
	for _, id := range out {
		if !(prevUnk && id == 0) {
			out[w] = id
			w++
		}
		prevUnk = id == 0
	}
	out = out[:w]
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	s.out = out
	return out
}

func relax(best []float64, words []int32, end int, score float64, id int32) {
	if best[end] == 0 || score >= best[end] {
		best[end] = score
		words[end] = id
	}
}

func appendRune(b []byte, r rune) []byte {
	if r < 0x80 {
		return append(b, byte(r))
	}
	return utf8.AppendRune(b, r)
}

func growF(b []float64, n int) []float64 {
	if cap(b) < n {
		b = make([]float64, n)
	}
	b = b[:n]
	clear(b)
	return b
}

func growI(b []int32, n int) []int32 {
	if cap(b) < n {
		b = make([]int32, n)
	}
	b = b[:n]
	clear(b)
	return b
}
