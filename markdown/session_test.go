package markdown

import (
	"reflect"
	"strings"
	"testing"
)

func TestRenderSessionDayDropsRepeatedID(t *testing.T) {
	out := string(RenderSessionDay("2026-08-18", fixtureSessions()))
	if n := strings.Count(out, "<!-- compaction:cmp-1 -->"); n != 1 {
		t.Errorf("compaction cmp-1 rendered %d times, want 1", n)
	}
	if strings.Contains(out, "A repeat: dropped.") {
		t.Error("the repeated compaction's text was rendered; want the first one kept")
	}
	if !strings.Contains(out, "Worked on the markdown package.") {
		t.Error("the first compaction's text is missing")
	}
	// the same id under another kind is another block
	out = string(RenderSessionDay("d", []SessionBlock{{Kind: "compaction", ID: "x"}, {Kind: "session", ID: "x"}}))
	if !strings.Contains(out, "<!-- compaction:x -->") || !strings.Contains(out, "<!-- session:x -->") {
		t.Errorf("got %s, want both blocks", out)
	}
}

func TestSessionDayRoundTrip(t *testing.T) {
	in := fixtureSessions()
	out := RenderSessionDay("2026-08-18", in)
	doc, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []SessionBlock{canonicalSession(in[0]), canonicalSession(in[1]), canonicalSession(in[3])}
	if len(doc.Blocks) != len(want) {
		t.Fatalf("got %d blocks, want %d", len(doc.Blocks), len(want))
	}
	for i, b := range doc.Blocks {
		got, err := ParseSessionBlock(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("block %d:\ngot  %#v\nwant %#v", i, got, want[i])
		}
		if _, err := ParseEntry(b); err == nil {
			t.Errorf("ParseEntry accepted session block %s", b.Anchor)
		}
	}
}
