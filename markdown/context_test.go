package markdown

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncate(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    string
		wantCut bool
	}{
		{"Short", "abc", 3, "abc", false},
		{"Empty", "", 0, "", false},
		{"ASCII", "abcdef", 4, "abcd\n[注：原文 6 字符已截断]", true},
		{"CJK", "记忆引擎长期记忆", 3, "记忆引\n[注：原文 8 字符已截断]", true},
		{"CJKFits", "记忆引擎", 4, "记忆引擎", false},
		{"Emoji", "a🙂b🙂", 2, "a🙂\n[注：原文 4 字符已截断]", true},
		{"CutAfterNewline", "ab\ncd", 3, "ab\n[注：原文 5 字符已截断]", true},
		{"Zero", "中文", 0, "[注：原文 2 字符已截断]", true},
		{"Negative", "中文", -5, "[注：原文 2 字符已截断]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Truncate(tt.in, tt.max)
			assert.False(t, got != tt.want || cut != tt.wantCut, "Truncate(%q, %d) = %q, %v; want %q, %v", tt.in, tt.max, got, cut, tt.want, tt.wantCut)
			assert.True(t, utf8.ValidString(got), "result is not valid UTF-8")
		})
	}
}

func TestStripTimestamps(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"NoStamps", "# T\n\ntext\n", "# T\n\ntext\n"},
		{"UpdatedLine", "# T\n\nUpdated: 2026-08-18T10:00:00Z\n\ntext\n", "# T\n\ntext\n"},
		{"Variants", "a\n_Last updated at 2026-08-18 10:00 UTC_\n- generated: 2026/8/18\n> 2026-08-18\n*10:00:00*\n<!-- updated 2026-08-18T10:00:00.123+08:00 -->\n更新时间：2026年8月18日 10:00\n最后更新 2026-08-18\n(2026-08-18)\nb\n",
			"a\nb\n"},
		{"KeepsSentences", "Updated 2026-08-18 by Ann\nreleased in 2026\nv2026-08-18\nUpdated\n",
			"Updated 2026-08-18 by Ann\nreleased in 2026\nv2026-08-18\nUpdated\n"},
		{"CRLF", "a\r\nDate: 2026-08-18\r\nb\r\n", "a\r\nb\r\n"},
		{"LeadingStamp", "2026-08-18\n\n# T\n", "# T\n"},
		{"NoFinalNewline", "a\n2026-08-18", "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(StripTimestamps([]byte(tt.in)))
			assert.Equal(t, tt.want, got, "got %q, want %q", got, tt.want)
		})
	}
}
