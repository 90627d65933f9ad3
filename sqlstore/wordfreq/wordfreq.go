package wordfreq

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Table is a parsed word-count table. It is read-only and safe for
// concurrent use.
type Table struct {
	buf   []byte   // the decompressed text
	off   []uint32 // start of each line in buf
	total float64  // Σ counts
}

// ErrFormat is wrapped by every error Parse returns for malformed text.
var ErrFormat = errors.New("wordfreq: malformed table")

// Parse decompresses and indexes a table.
func Parse(gz []byte) (*Table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("wordfreq: %w", err)
	}
	buf, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("wordfreq: %w", err)
	}
	if len(buf) >= 1<<32 {
		return nil, fmt.Errorf("%w: %d bytes is too large", ErrFormat, len(buf))
	}
	t := &Table{buf: buf}
	var prev []byte
	for start, line := 0, 1; start < len(buf); line++ {
		end := bytes.IndexByte(buf[start:], '\n')
		if end < 0 {
			return nil, fmt.Errorf("%w: line %d: no newline at the end", ErrFormat, line)
		}
		end += start
		word, n, ok := split(buf[start:end])
		if !ok {
			return nil, fmt.Errorf("%w: line %d: %q is not \"word count\" with a positive count", ErrFormat, line, buf[start:end])
		}
		if prev != nil && bytes.Compare(prev, word) >= 0 {
			return nil, fmt.Errorf("%w: line %d: %q does not sort after %q", ErrFormat, line, word, prev)
		}
		prev = word
		t.off = append(t.off, uint32(start))
		t.total += n
		start = end + 1
	}
	return t, nil
}

// split cuts a line into its word and count.
func split(line []byte) ([]byte, float64, bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || sp == len(line)-1 {
		return nil, 0, false
	}
	var n float64
	for _, c := range line[sp+1:] {
		if c < '0' || c > '9' {
			return nil, 0, false
		}
		n = n*10 + float64(c-'0')
	}
	return line[:sp], n, n > 0
}

// line returns entry i's word and count.
func (t *Table) line(i int) ([]byte, float64) {
	start := int(t.off[i])
	end := start + bytes.IndexByte(t.buf[start:], '\n')
	w, n, _ := split(t.buf[start:end])
	return w, n
}

// Len is the number of words.
func (t *Table) Len() int { return len(t.off) }

// Total is the sum of all counts.
func (t *Table) Total() float64 { return t.total }

// Count returns the count of word, and false when the table does not
// hold it. It does not allocate.
func (t *Table) Count(word []byte) (float64, bool) {
	i := sort.Search(len(t.off), func(i int) bool {
		start := int(t.off[i])
		end := start + bytes.IndexByte(t.buf[start:], ' ')
		return bytes.Compare(t.buf[start:end], word) >= 0
	})
	if i == len(t.off) {
		return 0, false
	}
	w, n := t.line(i)
	if !bytes.Equal(w, word) {
		return 0, false
	}
	return n, true
}

// Each calls fn with every word and its count, in table order; word is
// valid only during the call.
func (t *Table) Each(fn func(word []byte, count float64)) {
	for i := range t.off {
		fn(t.line(i))
	}
}
