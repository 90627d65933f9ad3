package distill

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDice(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{
		{"always run gofmt", "always run gofmt", 1},
		{"always run gofmt", "Always run GOFMT!", 1},
		{"always run gofmt", "never commit secrets", 0},
		{"a b c d", "a b", 2.0 * 2 / 6},
		{"", "", 0},
		{"", "x", 0},
		{"记忆注入", "记忆", 2.0 * 1 / 4}, // 记忆 忆注 注入 vs 记忆
	} {
		got := Dice(c.a, c.b)
		assert.False(t, math.Abs(got-c.want) > 1e-9, "Dice(%q, %q): got %v, want %v", c.a, c.b, got, c.want)
	}
}

func TestTruncateRunes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 2, "ab"},
		{"abc", 3, "abc"},
		{"abc", 9, "abc"},
		{"记忆注入", 2, "记忆"}, // runes, not bytes
		{"a记", 1, "a"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"", 5, ""},
	} {
		got := TruncateRunes(c.s, c.n)
		assert.Equal(t, c.want, got, "TruncateRunes(%q, %d): got %q, want %q", c.s, c.n, got, c.want)
	}
}

func TestCapInput(t *testing.T) {
	msgs := []Message{user(1, "aaaa"), user(2, "记忆记忆"), user(3, "cc"), user(4, "dddd")}
	seqs := func(ms []Message) string {
		var b strings.Builder
		for _, m := range ms {
			fmt.Fprintf(&b, "%d:%s ", m.Seq, m.Text)
		}
		return b.String()
	}
	for _, c := range []struct {
		max  int
		want string
	}{
		{100, "1:aaaa 2:记忆记忆 3:cc 4:dddd "},
		{9, "3:cc 4:dddd "},         // whole messages only: 记忆记忆 would make 10
		{10, "2:记忆记忆 3:cc 4:dddd "}, // runes, not bytes: 记忆记忆 is 4 runes, 12 bytes
		{13, "2:记忆记忆 3:cc 4:dddd "}, // aaaa would make 14
		{3, "4:ddd "},               // the newest alone is too long: its prefix
	} {
		got := seqs(CapInput(msgs, c.max))
		assert.Equal(t, c.want, got, "CapInput(max %d): got %q, want %q", c.max, got, c.want)
	}
	if got := CapInput(nil, 10); len(got) != 0 {
		t.Errorf("CapInput(nil): got %v", got)
	}
	// Default cap.
	big := []Message{user(1, strings.Repeat("x", 30000)), user(2, strings.Repeat("y", 30000))}
	if got := CapInput(big, 0); len(got) != 1 || got[0].Seq != 2 {
		t.Errorf("default cap: got %d messages, want the newest only", len(got))
	}
	huge := []Message{user(1, strings.Repeat("界", MaxInputChars+10))}
	got := CapInput(huge, 0)
	n := utf8.RuneCountInString(got[0].Text)
	assert.False(t, n != MaxInputChars || !utf8.ValidString(got[0].Text), "huge: got %d runes, want %d, valid UTF-8", n, MaxInputChars)
	assert.Equal(t, strings.Repeat("界", MaxInputChars+10), huge[0].Text, "CapInput changed its input")
}

func TestSelectRelated(t *testing.T) {
	msgs := []Message{user(1, "the MySQL database on db.internal is slow"), injected(2, "pnpm npm yarn"), assistant(3, "gofmt")}
	gone := mysqlEntry
	gone.ID, gone.Status = "m-gone", payload.StatusSuperseded
	got := SelectRelated(msgs, []Entry{pnpmEntry, gofmtEntry, gone, mysqlEntry,
		{ID: "m-unrelated", Title: "Coffee", Content: "Espresso only", Status: payload.StatusActive}})
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	// mysqlEntry shares most terms; gofmt comes from assistant text; npm only
	// from injected text, which does not count; superseded never.
	assert.EqualValues(t, "m-db,m-fmt", strings.Join(ids, ","), "got %v, want [m-db m-fmt]", ids)

	t.Run("CountCap", func(t *testing.T) {
		var many []Entry
		for i := 0; i < 50; i++ {
			many = append(many, Entry{ID: fmt.Sprintf("e%02d", i), Title: "MySQL note", Importance: i % 4, Status: payload.StatusActive})
		}
		got := SelectRelated(msgs, many)
		require.Len(t, got, MaxRelated, "got %d, want %d", len(got), MaxRelated)
		assert.False(t, got[0].Importance != 3 || got[0].ID != "e03", "got first %s (importance %d), want e03: ties go to importance, then input order", got[0].ID, got[0].Importance)
	})
	t.Run("ByteCap", func(t *testing.T) {
		var many []Entry
		for i := 0; i < 10; i++ {
			many = append(many, Entry{ID: fmt.Sprintf("big%d", i), Title: "MySQL", Content: strings.Repeat("x", 2900), Status: payload.StatusActive})
		}
		many = append(many, Entry{ID: "small", Title: "MySQL", Status: payload.StatusActive})
		got := SelectRelated(msgs, many)
		total := 0
		for _, e := range got {
			total += len(renderEntry(e))
		}
		assert.False(t, total > MaxRelatedBytes, "got %d bytes, want ≤ %d", total, MaxRelatedBytes)
		assert.False(t, len(got) != 5 || got[len(got)-1].ID != "small", "got %d entries ending %s, want 4 big ones and the small one", len(got), got[len(got)-1].ID)
	})
}

// TestCredentialCorpus runs the detector over the redactor's corpus: every
// text of the kinds it claims is caught, and no near-miss or ordinary
// text is.
func TestCredentialCorpus(t *testing.T) {
	for _, c := range readCorpus(t) {
		switch c.Kind {
		case "basic-auth", "aws-secret-key":
			continue // not claimed: intake's redactor handles these
		}
		if strings.Contains(c.Text, "hooks.slack.com") {
			continue // webhook URLs: not claimed either
		}
		if k := credentialIn(c.Text); k == "" {
			if c.Kind == "password" && !strings.ContainsAny(c.Text, "=:：") {
				continue
			}
			t.Errorf("%s not caught: %q", c.Kind, c.Text)
		}
	}
	for _, file := range []string{"near-misses.txt", "ordinary.txt"} {
		for _, line := range readLines(t, file) {
			k := credentialIn(line)
			assert.EqualValues(t, "", k, "%s: false positive %s: %q", file, k, line)
		}
	}
}
