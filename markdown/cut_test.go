package markdown

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCutUTF8(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 3, "abc"},
		{"abc", 2, "ab"},
		{"记忆", 5, "记"}, // 3-byte runes: byte 5 is inside 忆
		{"记忆", 3, "记"},
		{"记忆", 2, ""},
		{"a记", 0, ""},
	} {
		got := CutUTF8(tt.s, tt.n)
		assert.Equal(t, tt.want, got, "CutUTF8(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
	}
}
