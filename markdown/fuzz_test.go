package markdown

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse feeds Parse outside bytes. It must never panic, and whatever
// entries it reads must survive a render and a parse unchanged, with the
// second render byte-identical to the first.
func FuzzParse(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.md"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden files to seed from: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "###", "<!-- mem:x -->", "<!-- mem:x -->\n###\n*importance 1*\n", "### a\n*b · importance 2*\n> q\n\\### c\n",
		"<!-- mem:a%zz -->\n### t\n*importance 0 · tags: ,, · conflict*\n", "### x\r\n> \r\n>\r\n\r\nbody\r\n",
		"<!-- compaction:c -->\n### t\n*time: 1 · stream: s*\n\n\\<!-- x -->\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := Parse(b)
		if err != nil {
			return
		}
		_, _ = Compare(b, b)
		var es []Entry
		var sbs []SessionBlock
		for _, blk := range doc.Blocks {
			if blk.Start < 0 || blk.End > len(b) || blk.Start > blk.End || string(b[blk.Start:blk.End]) != blk.Raw {
				t.Fatalf("block offsets %d..%d do not match Raw", blk.Start, blk.End)
			}
			if e, err := ParseEntry(blk); err == nil {
				es = append(es, e)
			}
			if sb, err := ParseSessionBlock(blk); err == nil {
				sbs = append(sbs, sb)
			}
		}

		r1 := RenderGlobal(es)
		got := parseEntries(t, r1)
		if want := prepare(es); len(got)+len(want) > 0 && !reflect.DeepEqual(sortedByID(got), sortedByID(want)) {
			t.Fatalf("entries changed in a render and parse:\ngot  %#v\nwant %#v\nfile:\n%s", got, want, r1)
		}
		if r2 := RenderGlobal(got); !bytes.Equal(r1, r2) {
			t.Fatalf("second render differs:\n%s\n---\n%s", r1, r2)
		}
		if d, err := Compare(r1, r1); err != nil || !d.Empty() {
			t.Fatalf("Compare of a file with itself: %+v, %v", d, err)
		}

		s1 := RenderSessionDay("d", sbs)
		sdoc, err := Parse(s1)
		if err != nil {
			t.Fatal(err)
		}
		var back []SessionBlock
		for _, blk := range sdoc.Blocks {
			sb, err := ParseSessionBlock(blk)
			if err != nil {
				t.Fatalf("ParseSessionBlock of a rendered block: %v\n%s", err, blk.Raw)
			}
			back = append(back, sb)
		}
		if s2 := RenderSessionDay("d", back); !bytes.Equal(s1, s2) {
			t.Fatalf("session day changed in a render and parse:\n%s\n---\n%s", s1, s2)
		}
	})
}
