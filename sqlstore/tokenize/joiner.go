package tokenize

import (
	"bytes"
	"hash/maphash"
	"math/bits"
)

// A Joiner builds the text the episode index is fed: the distinct
// tokens of a text in first-seen order, joined by single spaces, equal
// to strings.Join(Terms(s), " "). It reuses its buffers across texts and
// makes one allocation per text (the string it returns), where Terms
// makes one per token and a map per text. A Joiner is not safe for
// concurrent use; its zero value is ready.
type Joiner struct {
	sc   Scanner
	buf  []byte   // the joined terms
	set  []uint64 // open addressing over buf: (start+1)<<8 | length, 0 = empty
	n    int      // terms in set
	seed maphash.Seed
	addF func(tok []byte) // j.add, made once
}

// A set entry keeps a token's length in 8 bits.
var _ = [255 - maxToken]struct{}{}

// Large reports whether the Joiner holds buffers grown by a long text
// (over 1 MiB of them), which a pool should not keep.
func (j *Joiner) Large() bool {
	return cap(j.buf)+8*cap(j.set)+4*cap(j.sc.t.rs) > 1<<20
}

// Terms returns the distinct tokens of s joined by single spaces.
func (j *Joiner) Terms(s string) string {
	if j.addF == nil {
		j.seed, j.addF = maphash.MakeSeed(), j.add
	}
	j.buf = j.buf[:0]
	// About one distinct token per 6 bytes of ordinary text; the set
	// grows if a text holds more.
	size := 16
	if want := len(s) / 3; want > size {
		size = 1 << bits.Len(uint(want-1))
	}
	if cap(j.set) < size {
		j.set = make([]uint64, size)
	} else {
		j.set = j.set[:size]
		clear(j.set)
	}
	j.n = 0
	j.sc.Scan(s, j.addF)
	return string(j.buf)
}

func (j *Joiner) add(tok []byte) {
	mask := uint64(len(j.set) - 1)
	i := maphash.Bytes(j.seed, tok) & mask
	for ; j.set[i] != 0; i = (i + 1) & mask {
		if j.term(j.set[i], tok) {
			return // seen
		}
	}
	if len(j.buf) > 0 {
		j.buf = append(j.buf, ' ')
	}
	start := len(j.buf)
	j.buf = append(j.buf, tok...)
	j.set[i] = uint64(start+1)<<8 | uint64(len(tok))
	j.n++
	if 2*j.n > len(j.set) {
		j.grow()
	}
}

// term reports whether set entry e is tok.
func (j *Joiner) term(e uint64, tok []byte) bool {
	n := int(e & 0xff)
	start := int(e>>8) - 1
	return n == len(tok) && bytes.Equal(j.buf[start:start+n], tok)
}

// put stores entry e, whose term is not in the set (when it grows).
func (j *Joiner) put(e uint64) {
	mask := uint64(len(j.set) - 1)
	start := int(e>>8) - 1
	for i := maphash.Bytes(j.seed, j.buf[start:start+int(e&0xff)]) & mask; ; i = (i + 1) & mask {
		if j.set[i] == 0 {
			j.set[i] = e
			return
		}
	}
}

func (j *Joiner) grow() {
	old := j.set
	j.set = make([]uint64, 2*len(old))
	for _, e := range old {
		if e != 0 {
			j.put(e)
		}
	}
}
