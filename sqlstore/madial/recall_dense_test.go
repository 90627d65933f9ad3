package madial

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
)

// evalTestModel is the installed encoder; CI (CI=true) installs it, so
// there its absence fails the test instead of skipping it.
func evalTestModel(t *testing.T) *encoder.Model {
	t.Helper()
	m, note := InstalledEncoder()
	if m == nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the model is needed in CI: %s", note)
		}
		t.Skip(note)
	}
	return m
}

// TestFusedChineseUnchanged: with the model, no zh case or memory gets a
// vector, so each zh case ranks exactly as its lexical ranking (compared
// on the same lexical list: recall.Find orders exact ties differently
// from one call to the next, e.g. full zh case 149), and the zh figures
// are today's; English cases all get dense scores.
func TestFusedChineseUnchanged(t *testing.T) {
	m := evalTestModel(t)
	dirs := []string{"../../testdata/madial"}
	if _, err := os.Stat("../../../shared/data/madial/MADial-Bench-zh-dialogue.json"); err == nil && !testing.Short() {
		dirs = append(dirs, "../../../shared/data/madial")
	}
	for _, dir := range dirs {
		memories, cases, err := Load(dir, "zh")
		if err != nil {
			t.Fatal(err)
		}
		byUser := map[int][]Memory{}
		for _, mm := range memories {
			byUser[mm.UserID] = append(byUser[mm.UserID], mm)
		}
		r := &recallRetriever{ctx: context.Background(), dir: filepath.Join(t.TempDir(), "zh")}
		d := EncoderDense(m)
		for _, c := range cases {
			if got := d.Scores(c, byUser[c.UserID], 20); got != nil {
				t.Errorf("%s zh case %d: dense scores %v, want none", dir, c.ID, got)
			}
			lex := r.RankScored(c, byUser[c.UserID], 20)
			if fused := recall.FuseDense(lex, d.Scores(c, byUser[c.UserID], 20), &recall.DefaultWeights); !slices.Equal(fused, lex) {
				t.Errorf("%s zh case %d: fused %v, want the lexical ranking %v", dir, c.ID, fused, lex)
			}
		}
		for _, mm := range memories {
			if v := d.Memory(mm); v != nil {
				t.Errorf("%s zh memory %d (%q) has a vector", dir, mm.ID, mm.Text)
			}
		}
		r.close()
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Logf("%s: %d zh cases ranked as without the model", dir, len(cases))
	}
	memories, cases, err := Load("../../testdata/madial", "en")
	if err != nil {
		t.Fatal(err)
	}
	d := EncoderDense(m)
	scored := 0
	for _, c := range cases {
		if len(d.Scores(c, memories, 5)) > 0 {
			scored++
		}
	}
	if scored != len(cases) {
		t.Errorf("got %d of %d en cases with dense scores, want all", scored, len(cases))
	}
}
