package zhdict

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadReadsEveryEntry(t *testing.T) {
	// doc.go: 134,688 lines, each a distinct word: a table
	// that failed to decompress would hold none.
	n := Load()
	assert.EqualValues(t, 134_688, n, "Load() = %d words, want the 134,688 lines of words.txt.gz (every line a distinct word)", n)
}

func TestSegment(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"Empty", "", nil},
		{"SingleChar", "我", []string{"我"}},
		{"WordsWhole", "我更喜欢玩捉迷藏", []string{"我", "更", "喜欢", "玩", "捉迷藏"}},
		{"LongestProbablePath", "圣诞节晚会上跳舞", []string{"圣诞节", "晚会", "上", "跳舞"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Segment([]rune(tt.in))
			assert.True(t, slices.Equal(got, tt.want), "Segment(%q) = %q, want %q", tt.in, got, tt.want)
		})
	}
}

func TestWordInfo(t *testing.T) {
	common, ok1 := WordInfo("一起")
	rare, ok2 := WordInfo("捉迷藏")
	require.True(t, ok1, "WordInfo: 一起 known %v, 捉迷藏 known %v, want both known", ok1, ok2)
	require.True(t, ok2, "WordInfo: 一起 known %v, 捉迷藏 known %v, want both known", ok1, ok2)
	assert.False(t, common >= rare, "WordInfo(一起) = %v, WordInfo(捉迷藏) = %v, want the common word less informative", common, rare)
	_, ok := WordInfo("上跳")
	assert.False(t, ok, "WordInfo(上跳): known, want unknown (no such word)")
	if _, ok := WordInfo("晚会"); !ok {
		t.Error("WordInfo(晚会): unknown, want known")
	}
}

func TestCharInfo(t *testing.T) {
	de, ok1 := CharInfo('的')
	rare, ok2 := CharInfo('藏')
	assert.False(t, !ok1 || !ok2 || de >= rare, "CharInfo: 的 %v (%v), 藏 %v (%v), want both known and 的 less informative", de, ok1, rare, ok2)
	_, ok := CharInfo('a')
	assert.False(t, ok, "CharInfo('a'): known, want unknown")
}
