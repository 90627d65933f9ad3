package encoder

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fuzzVocab is a small vocabulary in vocab.json's shape: reserved pieces,
// pieces with and without "▁", a null score, a repeated piece and an
// astral one (its UTF-16 length differs from its rune count).
const fuzzVocab = `[["\ufffd",0],["<s>",0],["</s>",0],["e1",0],["e2",0],["e3",0],
[".",-3.2],["s",-3.3],["▁the",-3.5],["▁a",-4.0],["a",-5.0],["b",-5.5],["▁",-6.0],
[":",null],["ab",-7.0],["▁ab",-6.5],["ab",-8.0],["😀",-9.0],["fi",-9.5],["e",-5.1],["é",-9.9]]`

// FuzzTokenize: any text tokenizes without panic into known ids, runs of
// the unknown piece merged, and NFKC is idempotent.
func FuzzTokenize(f *testing.F) {
	b, err := os.ReadFile("testdata/sentences.json")
	if err != nil {
		f.Fatal(err)
	}
	var seeds []string
	if err := json.Unmarshal(b, &seeds); err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add("e\u0301 \u1100\u1161\u11a8 \uac00 \xff\xfe")
	tok, err := ParseVocab([]byte(fuzzVocab))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Encode(text)
		for i, id := range ids {
			if id < 0 || int(id) >= tok.Len() || (id > 0 && id < reservedPieces) {
				t.Fatalf("%q: id %d out of range", text, id)
			}
			if i > 0 && id == 0 && ids[i-1] == 0 {
				t.Fatalf("%q: unmerged unknown pieces %v", text, ids)
			}
		}
		if utf8.ValidString(text) {
			once := string(nfkc(nil, text))
			if twice := string(nfkc(nil, once)); twice != once {
				t.Fatalf("NFKC not idempotent on %q: %q then %q", text, once, twice)
			}
		}
	})
}

func FuzzParseVocab(f *testing.F) {
	f.Add([]byte(fuzzVocab))
	f.Add([]byte(`[]`))
	f.Add([]byte(`[["a",1],["b"]]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok, err := ParseVocab(b)
		if err != nil {
			return
		}
		tok.Encode("the a ab 😀")
	})
}

// TestTokenizerQuirks pins the JavaScript tokenizer's behaviour on a
// vocabulary small enough to follow by hand. Every want was printed by
// @energetic-ai/embeddings' Tokenizer over fuzzVocab.
func TestTokenizerQuirks(t *testing.T) {
	tok, err := ParseVocab([]byte(fuzzVocab))
	require.NoError(t, err)
	for text, want := range map[string][]int32{
		"":     nil,
		"the":  {8},        // ▁the
		"ab":   {15},       // ▁ab beats ▁ + ab
		"a\tb": {9, 0, 11}, // the tab is unknown
		"zzz":  {12, 0},    // ▁, then one merged unknown run
		// NFKC makes ﬁ "fi"; no piece ends after "f", so that position keeps
		// best 0 and the unknown piece from it is free: ▁, unknown.
		"ﬁ": {12, 0},
		"é": {12, 20}, // NFKC composes e + U+0301
		// The backward pass steps by UTF-16 length: 😀 counts 2, skipping "a".
		"a😀":    {12, 17},
		"ab ab": {15, 15},     // ▁ab ▁ab
		"s.":    {12, 7, 6},   // ▁ s .
		"a:":    {9, 13},      // a null score counts as 0
		"b😀😀":   {12, 11, 17}, // the same: the last 😀 steps over the first
	} {
		got := tok.Encode(text)
		assert.True(t, slices.Equal(got, want), "%q: got %v, want %v", text, got, want)
	}
}

// TestDeterministic: two Encoders give bit-identical vectors, so vectors
// rebuilt by a replay equal the live ones exactly (same architecture and
// kernel path).
func TestDeterministic(t *testing.T) {
	m := testModel(t)
	a, b := m.NewEncoder(), m.NewEncoder()
	for _, q := range queries {
		va, vb := a.Encode(nil, q), b.Encode(nil, q)
		b.Encode(nil, "something else in between")
		vc := b.Encode(nil, q)
		assert.False(t, !slices.Equal(va, vb) || !slices.Equal(va, vc), "%q: vectors differ between encoders or calls", q)
	}
}
