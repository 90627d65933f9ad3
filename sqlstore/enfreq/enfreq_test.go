package enfreq

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadReadsEveryEntry(t *testing.T) {
	// doc.go: 60,384 distinct words; a table that failed to decompress
	// would hold none.
	n := Load()
	assert.EqualValues(t, 60_384, n, "Load() = %d words, want 60,384", n)
}

func TestWordInfo(t *testing.T) {
	the, ok1 := WordInfo("the")
	kite, ok2 := WordInfo("kite")
	require.True(t, ok1, "WordInfo: the known %v, kite known %v, want both known", ok1, ok2)
	require.True(t, ok2, "WordInfo: the known %v, kite known %v, want both known", ok1, ok2)
	assert.False(t, the >= kite, "WordInfo(the) = %.2f, WordInfo(kite) = %.2f, want the everyday word less informative", the, kite)
	unk, ok := WordInfo("parsehttprequest")
	assert.False(t, ok, "WordInfo(parsehttprequest): known, want unknown")
	assert.False(t, unk < kite, "unknown word info %.2f < WordInfo(kite) %.2f, want an unknown word at least as rare as any known one", unk, kite)
}
