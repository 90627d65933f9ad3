package main

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"dshmem/events/payload"
	"dshmem/observer/distill/distilleval"
	"dshmem/sqlstore/madial"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalMADialSubset(t *testing.T) {
	code, out, errs := cli(t, "", "eval", "madial", "--data", "../../testdata/madial", "--json")
	require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
	var rows []madial.Result
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ours := map[string]bool{}
	baselines := 0
	for _, r := range rows {
		assert.NotEqualValues(t, 0, r.Cases, "%s %s: no cases", r.Lang, r.Retriever)
		for _, k := range []string{"1", "3", "5", "10", "20"} {
			v, ok := r.Recall[k]
			assert.False(t, !ok || v < 0 || v > 1, "%s %s: R@%s = %v", r.Lang, r.Retriever, k, v)
		}
		for _, k := range []string{"5", "10"} {
			v, ok := r.NDCG[k]
			assert.False(t, !ok || v < 0 || v > 1, "%s %s: nDCG@%s = %v", r.Lang, r.Retriever, k, v)
		}
		switch r.Retriever {
		case "dshmem recall":
			ours[r.Lang] = true
		case "BGE-M3", "OpenAI": // the subset's baselines (the full data has six)
			baselines++
		}
	}
	assert.False(t, !ours["zh"] || !ours["en"] || baselines != 2, "got rows %+v, want dshmem recall for zh and en and the BGE-M3 and OpenAI baselines", rows)
	if code, _, _ := cli(t, "", "eval", "madial"); code != 2 {
		t.Errorf("without --data: exit %d, want 2", code)
	}
}

// TestEvalMADialFloors: --floors adds the English rows of recall.Find
// with its floors on (madial.Floors), at most 10 items, so no R@20; a
// value that is not a DenseFloor is a usage error, before any work.
func TestEvalMADialFloors(t *testing.T) {
	for _, bad := range []string{"x", "1.5", "-0.1", "0.5,", "nan", "NaN,0.7", "inf"} {
		code, _, errs := cli(t, "", "eval", "madial", "--data", "../../testdata/madial", "--floors", bad)
		assert.Equal(t, 2, code, "--floors %q: exit %d (%s), want 2", bad, code, errs)
		assert.Contains(t, errs, "is not a DenseFloor", "--floors %q", bad)
	}
	if m, note := madial.InstalledEncoder(); m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the model is needed in CI: %s", note)
		t.Skip(note)
	}
	code, out, errs := cli(t, "", "eval", "madial", "--data", "../../testdata/madial", "--floors", "0.7,off", "--json")
	require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
	var rows []madial.Result
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	var got []string
	for _, r := range rows {
		if r.Floors == nil {
			continue
		}
		got = append(got, r.Retriever)
		assert.Equal(t, "en", r.Lang)
		assert.Contains(t, r.Recall, "10", "%s: no R@10", r.Retriever)
		assert.NotContains(t, r.Recall, "20", "%s: R@20 of at most 10 items", r.Retriever)
	}
	assert.Equal(t, []string{"floors, words", "floors, DenseFloor 0.70", "floors, DenseFloor off",
		"floors, words (last line)", "floors, DenseFloor 0.70 (last line)", "floors, DenseFloor off (last line)"}, got)
	code, out, errs = cli(t, "", "eval", "madial", "--data", "../../testdata/madial", "--floors", "off")
	require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
	assert.Contains(t, out, "en with the floors on")
	assert.Contains(t, out, "floors, DenseFloor off (last line)")
}

// TestREADMEMADialFigures pins README's MADial-Bench figures to what
// `eval madial` measures on the full data beside the repository: every
// R@10 the README quotes for dshmem recall, the lexical floor, the dense
// baselines and (with the encoder installed) the fused English figure
// must be what the command prints, rounded as README rounds it. Under
// CI=true the data and the model must be there.
func TestREADMEMADialFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("the full MADial-Bench run takes ~20 s")
	}
	const dir = "../../../shared/data/madial"
	if _, err := os.Stat(dir + "/MADial-Bench-en-dialogue.json"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the full MADial-Bench is not at %s: %v", dir, err)
		}
		t.Skipf("the full MADial-Bench is not at %s", dir)
	}
	code, out, errs := cli(t, "", "eval", "madial", "--data", dir, "--json")
	require.Equal(t, 0, code, errs)
	var rows []madial.Result
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	r10 := map[string]string{}
	for _, r := range rows {
		r10[r.Lang+" "+r.Retriever] = fmt.Sprintf("%.3f", r.Recall["10"])
	}
	for _, k := range []string{"zh dshmem recall", "en dshmem recall", "zh lexical floor", "en lexical floor", "zh BGE-M3", "zh Stella", "zh Acge", "zh Dmeta", "zh OpenAI"} {
		require.Contains(t, r10, k, "eval madial printed no %s row", k)
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	text := string(readme)
	want := []string{
		"zh " + r10["zh dshmem recall"],
		"en " + r10["en dshmem recall"],
		"lexical floor " + r10["zh lexical floor"] + " / " + r10["en lexical floor"],
		fmt.Sprintf("BGE-M3 %s, Stella %s, Acge %s, Dmeta %s, OpenAI %s", r10["zh BGE-M3"], r10["zh Stella"], r10["zh Acge"], r10["zh Dmeta"], r10["zh OpenAI"]),
	}
	if fused, ok := r10["en dshmem recall+dense"]; ok {
		want = append(want, "fused with recall R@10 "+fused)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("no fused English row: the encoder is not installed (CI installs it with dshmem model install)")
	}
	for _, w := range want {
		assert.Contains(t, text, w, "README does not quote the measured figure %q", w)
	}
}

const distillCorpus = "../../testdata/distill/corpus"

func TestEvalDistill(t *testing.T) {
	t.Run("RulesTestSplitJSON", func(t *testing.T) {
		code, out, errs := cli(t, "", "eval", "distill", "--data", distillCorpus, "--split", "test", "--json")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		var got struct {
			Distiller string               `json:"distiller"`
			Model     string               `json:"model"`
			Splits    []distilleval.Report `json:"splits"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &got), "%s", out)
		require.Len(t, got.Splits, 1)
		assert.Equal(t, "rules", got.Distiller)
		r := got.Splits[0]
		assert.Equal(t, distilleval.SplitTest, r.Split)
		assert.GreaterOrEqual(t, r.Cases, 130)
		sup, ok := r.Find(payload.OpSupersede, distilleval.LangAll)
		require.True(t, ok, "no supersede row")
		assert.GreaterOrEqual(t, sup.Precision, 0.95, "supersede %+v", sup)
		add, _ := r.Find(payload.OpAdd, distilleval.LangAll)
		assert.GreaterOrEqual(t, add.F1, 0.85, "add %+v", add)
		assert.Len(t, r.Rows, len(distilleval.RowKinds)*len(distilleval.Languages))
	})
	t.Run("TextBothSplits", func(t *testing.T) {
		code, out, errs := cli(t, "", "eval", "distill", "--data", distillCorpus, "--confusions", "2")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		for _, want := range []string{"distiller rules (rules-v2)", "split tune:", "split test:", "supersede", "nothing", "all ops", "tp/fp/fn"} {
			assert.Contains(t, out, want)
		}
	})
	t.Run("OpenAIReplay", func(t *testing.T) {
		code, out, errs := cli(t, "", "eval", "distill", "--data", distillCorpus, "--distiller", "openai", "--split", "test")
		require.EqualValues(t, 0, code, "exit %d: %s", code, errs)
		assert.Contains(t, out, "distiller openai")
		assert.Contains(t, out, "split test: 160 cases, 160 exactly right")
	})
	t.Run("Errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"eval", "distill", "--data", distillCorpus, "--split", "train"}, 2, `--split "train"`},
			{[]string{"eval", "distill", "--data", distillCorpus, "--distiller", "gpt"}, 2, `--distiller "gpt"`},
			{[]string{"eval", "distill", "--data", t.TempDir()}, 2, "no corpus in"},
			{[]string{"eval", "distill", "--data", distillCorpus, "--distiller", "openai", "--answers", "nope.jsonl"}, 1, "read recorded answers"},
			{[]string{"eval", "distill", "extra"}, 2, "takes no arguments"},
			{[]string{"eval", "bogus"}, 2, "madial or distill"},
		} {
			code, _, errs := cli(t, "", c.args...)
			assert.Equal(t, c.code, code, "%v: exit %d, stderr %s", c.args, code, errs)
			assert.Contains(t, errs, c.want, "%v", c.args)
		}
	})
	t.Run("Help", func(t *testing.T) {
		code, out, _ := cli(t, "", "eval", "--help")
		require.EqualValues(t, 0, code)
		assert.Contains(t, out, "eval distill")
		assert.Contains(t, out, "Examples:")
	})
}
