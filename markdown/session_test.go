package markdown

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderSessionDayDropsRepeatedID(t *testing.T) {
	out := string(RenderSessionDay("2026-08-18", fixtureSessions()))
	n := strings.Count(out, "<!-- compaction:cmp-1 -->")
	assert.EqualValues(t, 1, n, "compaction cmp-1 rendered %d times, want 1", n)
	assert.NotContains(t, out, "A repeat: dropped.", "the repeated compaction's text was rendered; want the first one kept")
	assert.Contains(t, out, "Worked on the markdown package.", "the first compaction's text is missing")
	// the same id under another kind is another block
	out = string(RenderSessionDay("d", []SessionBlock{{Kind: "compaction", ID: "x"}, {Kind: "session", ID: "x"}}))
	assert.False(t, !strings.Contains(out, "<!-- compaction:x -->") || !strings.Contains(out, "<!-- session:x -->"), "got %s, want both blocks", out)
}

func TestSessionDayRoundTrip(t *testing.T) {
	in := fixtureSessions()
	out := RenderSessionDay("2026-08-18", in)
	doc, err := Parse(out)
	require.NoError(t, err)
	want := []SessionBlock{canonicalSession(in[0]), canonicalSession(in[1]), canonicalSession(in[3])}
	require.Len(t, doc.Blocks, len(want), "got %d blocks, want %d", len(doc.Blocks), len(want))
	for i, b := range doc.Blocks {
		got, err := ParseSessionBlock(b)
		require.NoError(t, err)
		assert.True(t, reflect.DeepEqual(got, want[i]), "block %d:\ngot  %#v\nwant %#v", i, got, want[i])
		if _, err := ParseEntry(b); err == nil {
			t.Errorf("ParseEntry accepted session block %s", b.Anchor)
		}
	}
}
