package wordfreq

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

func TestParseAndCount(t *testing.T) {
	tab, err := Parse(gz(t, "apple 3\nbanana 5\ncherry 2\n"))
	require.NoError(t, err)
	assert.False(t, tab.Len() != 3 || tab.Total() != 10, "Len %d Total %v, want 3 and 10", tab.Len(), tab.Total())
	for _, tt := range []struct {
		word string
		n    float64
		ok   bool
	}{{"apple", 3, true}, {"banana", 5, true}, {"cherry", 2, true}, {"ban", 0, false}, {"bananas", 0, false}, {"", 0, false}, {"zzz", 0, false}, {"a", 0, false}} {
		n, ok := tab.Count([]byte(tt.word))
		assert.False(t, n != tt.n || ok != tt.ok, "Count(%q) = %v, %v; want %v, %v", tt.word, n, ok, tt.n, tt.ok)
	}
	var words []string
	tab.Each(func(w []byte, n float64) { words = append(words, string(w)) })
	assert.False(t, len(words) != 3 || words[0] != "apple" || words[2] != "cherry", "Each: %q, want the three words in order", words)
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ name, text string }{
		{"Unsorted", "banana 5\napple 3\n"},
		{"Duplicate", "apple 3\napple 4\n"},
		{"ZeroCount", "apple 0\n"},
		{"NotANumber", "apple x\n"},
		{"NoCount", "apple\n"},
		{"NoWord", " 3\n"},
		{"NoFinalNewline", "apple 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(gz(t, tt.text))
			assert.ErrorIs(t, err, ErrFormat, "Parse(%q) = %v, want ErrFormat", tt.text, err)
		})
	}
	_, err := Parse([]byte("not gzip"))
	assert.Error(t, err, "Parse of non-gzip bytes: no error")
}
