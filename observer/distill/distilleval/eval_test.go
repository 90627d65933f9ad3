package distilleval

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events/payload"
	"dshmem/observer/distill"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const corpusDir = "../../../testdata/distill/corpus"

// The test split's figures for the rules distiller (rules-v2), as README
// quotes them. TestRulesTestSplitFigures fails when a figure drops below
// its target or below the one recorded here; raise these when the
// distiller gets better, never lower them to make the test pass.
var recordedRules = []struct {
	op, lang, metric string
	target, recorded float64
}{
	{payload.OpSupersede, LangAll, "precision", 0.95, 1.000},
	{payload.OpSupersede, LangAll, "f1", 0.85, 1.000},
	{payload.OpAdd, LangAll, "f1", 0.85, 0.957},
	{payload.OpAdd, "en", "f1", 0, 0.966},
	{payload.OpAdd, "zh", "f1", 0, 0.947},
	{payload.OpSupersede, "en", "f1", 0, 1.000},
	{payload.OpSupersede, "zh", "f1", 0, 1.000},
	{RowNothing, LangAll, "f1", 0, 0.989},
	{RowAll, LangAll, "f1", 0, 0.978},
}

func metric(r Row, name string) float64 {
	switch name {
	case "precision":
		return r.Precision
	case "recall":
		return r.Recall
	}
	return r.F1
}

func runSplit(t *testing.T, d distill.Distiller, split string) Report {
	t.Helper()
	cases, err := Load(corpusDir, split)
	require.NoError(t, err, "load the %s split", split)
	outcomes, err := Run(context.Background(), d, cases)
	require.NoError(t, err, "run %s", d.Name())
	return Score(split, outcomes)
}

func TestRulesTestSplitFigures(t *testing.T) {
	r := runSplit(t, distill.NewRules(), SplitTest)
	require.Zero(t, r.Errors, "distiller errors: %+v", r.Confusions)
	for _, want := range recordedRules {
		row, ok := r.Find(want.op, want.lang)
		require.True(t, ok, "no row %s/%s", want.op, want.lang)
		got := metric(row, want.metric)
		floor := max(want.target, want.recorded) - 0.0005 // recorded to 3 places
		assert.GreaterOrEqual(t, got, floor, "%s %s %s: got %.3f, want ≥ %.3f (target %.2f, recorded %.3f); confusions: %+v",
			want.op, want.lang, want.metric, got, floor, want.target, want.recorded, r.Confusions)
	}
}

// TestOpenAIRecordedAnswers runs the openai distiller on both splits
// against the replay server: every case has an answer, every request is
// found, and the recorded answers (written from the labels) score what
// the labels say once through ParseResult and Validate.
func TestOpenAIRecordedAnswers(t *testing.T) {
	answers, err := LoadAnswers(filepath.Join(corpusDir, AnswersFile))
	require.NoError(t, err)
	srv, err := NewReplayServer(answers)
	require.NoError(t, err)
	defer srv.Close()
	d, err := distill.NewOpenAI(distill.OpenAIConfig{BaseURL: srv.URL(), APIKey: "replay", MaxAttempts: 1})
	require.NoError(t, err)
	for _, split := range []string{SplitTune, SplitTest} {
		r := runSplit(t, d, split)
		assert.Zero(t, r.Errors, "%s: replay errors: %+v", split, r.Confusions)
		row, _ := r.Find(RowAll, LangAll)
		assert.InDelta(t, 1.0, row.F1, 1e-9, "%s: all ops F1 %.3f, want 1 (recorded answers follow the labels): %+v", split, row.F1, r.Confusions)
	}
}

func TestReplayServerRefusesUnknownRequests(t *testing.T) {
	c := Case{ID: "x-1", Lang: "en", Split: SplitTest, Utterance: Turn{Role: "user", Text: "always run gofmt"}}
	answers := map[string]Answer{"x-1": {Case: "x-1", Utterance: "never run gofmt", Answer: json.RawMessage(`{"version":1,"operations":[]}`)}}
	srv, err := NewReplayServer(answers)
	require.NoError(t, err)
	defer srv.Close()
	d, err := distill.NewOpenAI(distill.OpenAIConfig{BaseURL: srv.URL(), APIKey: "replay", MaxAttempts: 1})
	require.NoError(t, err)

	_, err = d.Distill(context.Background(), Request(c))
	var apiErr *distill.APIError
	require.ErrorAs(t, err, &apiErr, "a request whose utterance differs from the recording")
	assert.Equal(t, http.StatusNotFound, apiErr.Status)
	assert.Contains(t, apiErr.Message, "does not carry the recorded utterance")

	c.ID = "x-2"
	_, err = d.Distill(context.Background(), Request(c))
	require.ErrorAs(t, err, &apiErr, "a case without a recording")
	assert.Contains(t, apiErr.Message, `no recorded answer for case "x-2"`)
}

func TestRequestClaimsOnlyTheUtterance(t *testing.T) {
	c := Case{ID: "c", Lang: "en", Split: SplitTest,
		Context: Context{
			Entries: []Entry{{ID: "e1", Type: "fact", Title: "Staging DB port 5432", Content: "The staging database listens on port 5432."}, {ID: "e2", Type: "rule", Title: "Always run gofmt", Content: "x"}},
			Turns:   []Turn{{Role: "assistant", Text: "The staging DB is on port 5432."}, {Role: "user", Text: "hi", Injected: true}},
		},
		Utterance: Turn{Role: "user", Text: "actually it's 5433"}}
	req := Request(c)
	require.Len(t, req.Messages, 3)
	assert.Equal(t, uint64(3), req.From)
	assert.Equal(t, uint64(3), req.To)
	assert.Equal(t, "c:3", req.Messages[2].EventID)
	assert.True(t, req.Messages[1].Injected)
	require.Len(t, req.Related, 1, "SelectRelated keeps the entry sharing terms with the messages: %+v", req.Related)
	assert.Equal(t, "e1", req.Related[0].ID)
	assert.Equal(t, Stream, req.Related[0].Scope)
}

func TestScoreMatching(t *testing.T) {
	add := func(typ string) distill.Op { return distill.Op{Op: payload.OpAdd, Type: typ} }
	sup := func(target string) distill.Op { return distill.Op{Op: payload.OpSupersede, TargetID: target} }
	outcomes := []Outcome{
		// right supersede, add of the wrong type
		{Case: Case{ID: "a", Lang: "en", Expect: []Expect{{Op: "supersede", Target: "e1"}, {Op: "add", Type: "rule"}}},
			Got: []distill.Op{sup("e1"), add("fact")}},
		// supersede of the wrong entry
		{Case: Case{ID: "b", Lang: "zh", Expect: []Expect{{Op: "supersede", Target: "e1"}}}, Got: []distill.Op{sup("e2")}},
		// nothing expected, nothing got; nothing expected, an add got
		{Case: Case{ID: "c", Lang: "zh"}},
		{Case: Case{ID: "d", Lang: "en"}, Got: []distill.Op{add("fact")}},
		// ops expected, none got
		{Case: Case{ID: "e", Lang: "en", Expect: []Expect{{Op: "add", Type: "fact"}}}},
	}
	r := Score(SplitTest, outcomes)
	assert.Equal(t, 5, r.Cases)
	assert.Equal(t, 1, r.Exact)
	check := func(op, lang string, tp, fp, fn int) {
		t.Helper()
		row, ok := r.Find(op, lang)
		require.True(t, ok)
		assert.Equal(t, [3]int{tp, fp, fn}, [3]int{row.TP, row.FP, row.FN}, "%s/%s tp/fp/fn", op, lang)
	}
	check(payload.OpSupersede, LangAll, 1, 1, 1)
	check(payload.OpSupersede, "en", 1, 0, 0)
	check(payload.OpSupersede, "zh", 0, 1, 1)
	check(payload.OpAdd, LangAll, 0, 2, 2)
	check(RowNothing, LangAll, 1, 1, 1)
	check(RowAll, LangAll, 1, 3, 3)
	row, _ := r.Find(payload.OpSupersede, LangAll)
	assert.InDelta(t, 0.5, row.Precision, 1e-9)
	assert.InDelta(t, 0.5, row.F1, 1e-9)
	row, _ = r.Find(payload.OpForget, LangAll)
	assert.Equal(t, [3]float64{1, 1, 1}, [3]float64{row.Precision, row.Recall, row.F1}, "no forget expected or got")
	require.Len(t, r.Confusions, 4)
	assert.Equal(t, "a", r.Confusions[0].Case)
	assert.Equal(t, []string{"add(rule)"}, r.Confusions[0].Expected)
	assert.Equal(t, []string{"add(fact)"}, r.Confusions[0].Got)
	assert.Equal(t, []string{"supersede(e2)"}, r.Confusions[1].Got)
}

func TestLoadRejectsBadCases(t *testing.T) {
	good := `{"id":"t-1","lang":"en","split":"test","kind":"k","context":{"entries":[{"id":"e1","type":"fact","title":"T","content":"C"}],"turns":[]},"utterance":{"role":"user","text":"x"},"expect":[{"op":"supersede","target":"e1"}]}`
	for name, c := range map[string]struct{ line, want string }{
		"NotJSON":       {`{"id":`, "test.jsonl:1"},
		"UnknownField":  {strings.Replace(good, `"kind":"k"`, `"kinf":"k"`, 1), "unknown field"},
		"WrongSplit":    {strings.Replace(good, `"split":"test"`, `"split":"tune"`, 1), `split "tune" in the test file`},
		"Lang":          {strings.Replace(good, `"lang":"en"`, `"lang":"fr"`, 1), `lang "fr"`},
		"UnknownOp":     {strings.Replace(good, `"op":"supersede"`, `"op":"replace"`, 1), `expected op "replace"`},
		"MissingTarget": {strings.Replace(good, `"target":"e1"`, `"target":"e9"`, 1), `aims at "e9"`},
		"AddType":       {strings.Replace(good, `{"op":"supersede","target":"e1"}`, `{"op":"add","type":"opinion"}`, 1), `add of type "opinion"`},
		"Role":          {strings.Replace(good, `"role":"user"`, `"role":"system"`, 1), `role "system"`},
		"Duplicate":     {good + "\n" + good, `already used at`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "test.jsonl"), []byte(c.line+"\n"), 0o644))
			_, err := Load(dir, SplitTest)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "test.jsonl"), []byte(good+"\n\n"), 0o644))
		cases, err := Load(dir, SplitTest)
		require.NoError(t, err)
		require.Len(t, cases, 1)
	})
	t.Run("UnknownSplit", func(t *testing.T) {
		_, err := Load(t.TempDir(), "train")
		require.ErrorContains(t, err, `unknown split "train"`)
	})
	t.Run("NoCorpus", func(t *testing.T) {
		_, err := Load(t.TempDir(), SplitTest)
		require.ErrorContains(t, err, "the corpus directory")
	})
}

// TestCorpusShape checks what issue #16 asks of the corpus: at least 400
// utterances, about half in each language, a third of them in the test
// split, every kind of utterance present in both splits and languages,
// and every op kind labelled.
func TestCorpusShape(t *testing.T) {
	all, err := Load(corpusDir, SplitTune, SplitTest)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 400)
	perLang, perSplit := map[string]int{}, map[string]int{}
	kinds := map[string]map[string]bool{}
	ops := map[string]int{}
	for _, c := range all {
		perLang[c.Lang]++
		perSplit[c.Split]++
		k := c.Kind
		if i := strings.IndexByte(k, '-'); i > 0 && strings.HasPrefix(k, "correction") {
			k = k[:i]
		}
		if kinds[k] == nil {
			kinds[k] = map[string]bool{}
		}
		kinds[k][c.Split+"/"+c.Lang] = true
		for _, x := range c.Expect {
			ops[x.Op]++
		}
	}
	assert.InDelta(t, 0.5, float64(perLang["zh"])/float64(len(all)), 0.05, "zh share: %v", perLang)
	assert.GreaterOrEqual(t, 3*perSplit[SplitTest], len(all), "test split under a third: %v", perSplit)
	for _, k := range []string{"correction", "hypothetical", "question", "quote", "code", "log", "assistant", "injected", "sarcasm", "joke", "other-project", "negation", "forget", "revise", "conflict-hedged"} {
		for _, where := range []string{"tune/en", "tune/zh", "test/en", "test/zh"} {
			assert.True(t, kinds[k][where], "no %s case in %s", k, where)
		}
	}
	for _, op := range payload.OpKinds {
		assert.Positive(t, ops[op], "no case expects %s", op)
	}
	for _, typ := range payload.EntryTypes {
		n := 0
		for _, c := range all {
			for _, x := range c.Expect {
				if x.Op == payload.OpAdd && x.Type == typ {
					n++
				}
			}
		}
		assert.Positive(t, n, "no case expects an add of type %s", typ)
	}
}

// TestRulesProbes keeps what the rules reached on the probes written
// while tuning (testdata/distill/probes): tuning data, so only a floor.
func TestRulesProbes(t *testing.T) {
	cases, err := Load("../../../testdata/distill/probes", SplitTune)
	require.NoError(t, err)
	outcomes, err := Run(context.Background(), distill.NewRules(), cases)
	require.NoError(t, err)
	r := Score(SplitTune, outcomes)
	for _, want := range []struct {
		op     string
		metric string
		floor  float64
	}{
		{payload.OpSupersede, "precision", 1.0},
		{payload.OpSupersede, "f1", 0.99},
		{payload.OpAdd, "f1", 0.985},
		{RowAll, "f1", 0.985},
	} {
		row, _ := r.Find(want.op, LangAll)
		got := metric(row, want.metric)
		assert.GreaterOrEqual(t, got, want.floor-0.0005, "probes %s %s: got %.3f, want ≥ %.3f; confusions %+v", want.op, want.metric, got, want.floor, r.Confusions)
	}
}
