package markdown

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTopicFile(t *testing.T) {
	tests := []struct{ topic, want string }{
		// hashes: printf %s TOPIC | sha256sum | cut -c1-8
		{"Go tooling", "go-tooling.md"},
		{"  go_tooling  ", "go-tooling.md"},
		{"Go--Tooling", "go-tooling.md"},
		{"C++", "c-f1deb75f.md"},
		{"数据库", "topic-263200d7.md"},
		{"", "topic-e3b0c442.md"},
		{"..", "topic-5ec1f7e7.md"},
		{"con", "con-1143da2b.md"},
	}
	for _, tt := range tests {
		got := TopicFile(tt.topic)
		assert.Equal(t, tt.want, got, "TopicFile(%q) = %q, want %q", tt.topic, got, tt.want)
	}
}

func TestTopicFileIsSafe(t *testing.T) {
	safe := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*\.md$`)
	topics := []string{"a/b", `a\b`, "../../etc/passwd", "Go 工具链", strings.Repeat("long topic ", 40), "\x00", "Ａ", "LPT1", "a.b", "🙂"}
	seen := map[string]string{}
	for _, topic := range topics {
		got := TopicFile(topic)
		assert.False(t, !safe.MatchString(got) || len(got) > 64+9+3, "TopicFile(%q) = %q: not a safe name", topic, got)
		prev, ok := seen[got]
		assert.False(t, ok, "TopicFile(%q) = TopicFile(%q) = %q", topic, prev, got)
		seen[got] = topic
	}
}
