package madial

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subsetDir holds a verbatim subset of the published data (see its README).
var subsetDir = filepath.Join("..", "..", "testdata", "madial")

func TestLoadSubset(t *testing.T) {
	t.Run("ZH", func(t *testing.T) {
		mems, cases, err := Load(subsetDir, "zh")
		require.NoError(t, err, "Load")
		require.Len(t, mems, 32, "got %d memories, %d cases, want 32, 7", len(mems), len(cases))
		require.Len(t, cases, 7, "got %d memories, %d cases, want 32, 7", len(mems), len(cases))
		got := countUser(mems, 1)
		assert.EqualValues(t, 19, got, "user 1 has %d memories, want 19", got)
		m := mems[0]
		assert.False(t, m.ID != 1 || m.UserID != 1 || m.Text != "Bart在圣诞节晚会上跳舞，感觉非常开心。" ||
			m.Time != "2023-12-25" || m.Scene != "活动类" || m.Emotion != "开心", "memory 0 = %+v", m)
		assert.True(t, slices.ContainsFunc(mems, func(m Memory) bool { return m.ID == 161 }), "zh-only memory 161 missing")
		c := cases[0]
		assert.False(t, c.ID != 0 || c.UserID != 1 || !slices.Equal(c.Relevant, []int{1, 78, 105, 113, 108}), "case 0 = id %d user %d relevant %v", c.ID, c.UserID, c.Relevant)
		// test-turn [8]: lines 0..7, ending with the user's turn the
		// assistant must answer from memory.
		assert.False(t, len(c.Turns) != 8 || c.Turns[0] != "<BOD>\n" || c.Query != strings.Join(c.Turns, "") ||
			!strings.HasSuffix(c.Query, "<Bart>:\"我特别期待那天晚上，我想让它变得很特别！\"\n"), "case 0: %d turns, query %q", len(c.Turns), c.Query)
		ids := caseIDs(cases)
		want := []int{0, 1, 3, 23, 54, 100, 130}
		assert.True(t, slices.Equal(ids, want), "case ids %v, want %v (the zh file's own ids)", ids, want)
		if got := cases[4].Turns; len(got) != 8 {
			t.Errorf("case 54 has %d turns, want 8 (zh test-turn [8])", len(got))
		}
		if got := cases[3].Turns; len(got) != 6 {
			t.Errorf("case 23 has %d turns, want 6 (first of test-turn [6 8])", len(got))
		}
	})
	t.Run("EN", func(t *testing.T) {
		mems, cases, err := Load(subsetDir, "en")
		require.NoError(t, err, "Load")
		require.Len(t, mems, 30, "got %d memories, %d cases, want 30, 7", len(mems), len(cases))
		require.Len(t, cases, 7, "got %d memories, %d cases, want 30, 7", len(mems), len(cases))
		// en records have no user-id: borrowed from the zh file.
		got := countUser(mems, 1)
		assert.EqualValues(t, 18, got, "user 1 has %d memories, want 18", got)
		if got := countUser(mems, 2); got != 12 {
			t.Errorf("user 2 has %d memories, want 12", got)
		}
		// en dialogues have no id: the line index is the id.
		ids := caseIDs(cases)
		assert.True(t, slices.Equal(ids, []int{0, 1, 2, 3, 4, 5, 6}), "case ids %v, want line indexes", ids)
		// Labels differ from zh where zh points at its extra memories 161..171.
		if got := cases[2].Relevant; !slices.Equal(got, []int{4, 6, 32, 76, 126}) {
			t.Errorf("en case 2 relevant %v, want [4 6 32 76 126]", got)
		}
		if got := cases[4].Turns; len(got) != 6 {
			t.Errorf("en case 4 has %d turns, want 6 (en test-turn [6 8])", len(got))
		}
		assert.True(t, strings.HasPrefix(mems[0].Text, "Bart danced at the Christmas party"), "memory 0 text %q", mems[0].Text)
	})
}

func countUser(mems []Memory, user int) int {
	n := 0
	for _, m := range mems {
		if m.UserID == user {
			n++
		}
	}
	return n
}

func caseIDs(cases []Case) []int {
	ids := make([]int, len(cases))
	for i, c := range cases {
		ids[i] = c.ID
	}
	return ids
}

// writeData writes a data directory with the given zh memory and dialogue
// lines (and en files when given).
func writeData(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

const (
	zhMem = "MADial-Bench-zh-memory.json"
	zhDia = "MADial-Bench-zh-dialogue.json"
	enMem = "MADial-Bench-en-memory.json"
	enDia = "MADial-Bench-en-dialogue.json"

	memLine1 = `{"1": {"time": "2023-12-25", "scene": "s", "emotion": "e", "event": "a", "user-id": 1, "id": "1"}}`
	memLine2 = `{"2": {"time": "2023-12-25", "scene": "s", "emotion": "e", "event": "b", "user-id": 2, "id": "2"}}`
	diaOK    = `{"dialogue": ["<BOD>\n", "<A>:\"x\"\n", "<Assistant>:\"y\"\n"], "test-turn": [2], "relevant-id": [1], "user-id": 1, "id": 0}`
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		lang     string
		files    map[string]string
		wantErr  error
		wantLine int // 0: not a *LineError
	}{
		{"ErrLang", "fr", nil, ErrLang, 0},
		{"ErrNotExist", "zh", nil, os.ErrNotExist, 0},
		{"BadJSON", "zh", map[string]string{zhMem: memLine1 + "\n{\"2\": \n"}, nil, 2},
		{"ErrShapeTwoKeys", "zh", map[string]string{zhMem: `{"1": {"event": "a", "user-id": 1}, "2": {"event": "b", "user-id": 1}}`}, ErrShape, 1},
		{"ErrShapeKeyIDMismatch", "zh", map[string]string{zhMem: `{"1": {"event": "a", "user-id": 1, "id": "2"}}`}, ErrShape, 1},
		{"ErrDuplicateID", "zh", map[string]string{zhMem: memLine1 + "\n\n" + memLine1 + "\n"}, ErrDuplicateID, 3},
		{"ErrNoUserZH", "zh", map[string]string{zhMem: `{"1": {"event": "a"}}`, zhDia: diaOK}, ErrNoUser, 0},
		{"ErrNoUserENWithoutZH", "en", map[string]string{enMem: `{"1": {"event": "a"}}`, enDia: diaOK}, os.ErrNotExist, 0},
		{"ErrNoUserENNotInZH", "en", map[string]string{enMem: `{"3": {"event": "a"}}`, zhMem: memLine1, enDia: diaOK}, ErrNoUser, 0},
		{"ErrUnknownMemory", "zh", map[string]string{zhMem: memLine2, zhDia: diaOK}, ErrUnknownMemory, 1},
		{"ErrForeignMemory", "zh", map[string]string{zhMem: memLine1, zhDia: strings.Replace(diaOK, `"user-id": 1`, `"user-id": 2`, 1)}, ErrForeignMemory, 1},
		{"ErrTestTurnBeyond", "zh", map[string]string{zhMem: memLine1, zhDia: strings.Replace(diaOK, `[2]`, `[9]`, 1)}, ErrTestTurn, 1},
		{"ErrTestTurnMissing", "zh", map[string]string{zhMem: memLine1, zhDia: strings.Replace(diaOK, `[2]`, `[]`, 1)}, ErrTestTurn, 1},
		{"ErrDuplicateCase", "zh", map[string]string{zhMem: memLine1, zhDia: diaOK + "\n" + diaOK}, ErrDuplicateID, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeData(t, tt.files)
			_, _, err := Load(dir, tt.lang)
			require.Error(t, err, "Load succeeded, want error")
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
			var le *LineError
			got := errors.As(err, &le)
			require.Equal(t, (tt.wantLine > 0), got, "got %v (LineError: %v), want LineError: %v", err, got, tt.wantLine > 0)
			if le != nil && le.Line != tt.wantLine {
				t.Errorf("got line %d, want %d (%v)", le.Line, tt.wantLine, err)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		dir := writeData(t, map[string]string{zhMem: memLine1 + "\n" + memLine2 + "\n", zhDia: diaOK + "\n"})
		mems, cases, err := Load(dir, "zh")
		require.NoError(t, err, "Load")
		assert.False(t, len(mems) != 2 || len(cases) != 1 || cases[0].Query != "<BOD>\n<A>:\"x\"\n", "got %d memories, cases %+v", len(mems), cases)
	})
}

func TestLoadBaselinesSubset(t *testing.T) {
	got, err := LoadBaselines(filepath.Join(subsetDir, "baselines-zh"))
	require.NoError(t, err, "LoadBaselines")
	require.Len(t, got, 2, "retrievers %v, want BGE-M3 and OpenAI", mapKeys(got))
	require.NotNil(t, got["BGE-M3"], "retrievers %v, want BGE-M3 and OpenAI", mapKeys(got))
	require.NotNil(t, got["OpenAI"], "retrievers %v, want BGE-M3 and OpenAI", mapKeys(got))
	for name, ranks := range got {
		assert.Len(t, ranks, 7, "%s: %d cases, want 7", name, len(ranks))
		for id, r := range ranks {
			assert.Len(t, r, 20, "%s case %d: %d ids, want 20", name, id, len(r))
		}
	}
	r := got["BGE-M3"][0][:3]
	assert.True(t, slices.Equal(r, []int{105, 1, 51}), "BGE-M3 case 0 starts %v, want [105 1 51]", r)
	if r := got["OpenAI"][130]; r == nil {
		t.Errorf("OpenAI has no case 130")
	}
	t.Run("ErrNoFiles", func(t *testing.T) {
		_, err := LoadBaselines(t.TempDir())
		assert.Error(t, err, "LoadBaselines on an empty dir succeeded")
	})
}

func mapKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestBaselineName(t *testing.T) {
	for file, want := range map[string]string{
		"BGE_M3_dense_zh_top_20_ids.json":   "BGE-M3",
		"BGE_M3_colbert_zh_top_20_ids.json": "BGE-M3-colbert",
		"openai_zh_top_20_ids.json":         "OpenAI",
		"Stella_zh_top_20_ids.json":         "Stella",
		"jina_en_top_20_ids.json":           "jina",
	} {
		got := baselineName(file)
		assert.Equal(t, want, got, "baselineName(%q) = %q, want %q", file, got, want)
	}
}

// fakeRetriever checks the candidate set Run offers and returns more than k.
type fakeRetriever struct{ t *testing.T }

func (f fakeRetriever) Rank(c Case, candidates []Memory, k int) []int {
	var ids []int
	for _, m := range candidates {
		assert.Equal(f.t, c.UserID, m.UserID, "case %d of user %d offered memory %d of user %d", c.ID, c.UserID, m.ID, m.UserID)
		ids = append(ids, m.ID)
	}
	return append(ids, ids...) // too many on purpose
}

func TestRun(t *testing.T) {
	mems, cases, err := Load(subsetDir, "zh")
	require.NoError(t, err, "Load")
	ranked := Run(fakeRetriever{t}, mems, cases, 5)
	require.Len(t, ranked, len(cases), "ranked %d cases, want %d", len(ranked), len(cases))
	for _, c := range cases {
		got := len(ranked[c.ID])
		assert.EqualValues(t, 5, got, "case %d: %d ids, want 5 (cut to k)", c.ID, got)
	}
	t.Run("Lexical", func(t *testing.T) {
		ranked := Run(Lexical{}, mems, cases, 20)
		m := Evaluate(ranked, cases)
		assert.Equal(t, len(cases), m.N, "N = %d, want %d", m.N, len(cases))
		// Case 0 is about performing at the New Year's party (元旦晚会);
		// memory 105, labelled relevant, is the one sharing those words.
		got := ranked[0]
		assert.False(t, len(got) == 0 || got[0] != 105, "Lexical case 0 ranks %v, want memory 105 first", got)
		// Each user has fewer than 20 subset memories, so a full ranking
		// holds every relevant id.
		if got := m.Recall[20]; got != 1 {
			t.Errorf("R@20 = %v, want 1", got)
		}
	})
}
