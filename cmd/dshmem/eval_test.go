package main

import (
	"encoding/json"
	"testing"

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
