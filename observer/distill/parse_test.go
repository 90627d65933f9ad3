package distill

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fixtureDir = "../../testdata/distill"

func TestParseResultFixtures(t *testing.T) {
	want := map[string]string{ // file → ops as "op:title" joined by |
		"ops-valid.json":       "add:Prefer tabs over spaces|supersede:Database: PostgreSQL",
		"ops-fenced.md":        "add:Always run gofmt",
		"ops-empty.json":       "",
		"legacy-memories.json": "add:Never commit secrets|add:以后都用 pnpm",
		"legacy-array.json":    "add:Staging DB port|revise:|add:",
		"flex-fields.json":     "add:Use gRPC",
	}
	// The fixtures are files with an extension; corpus/ is the labelled
	// distillation corpus (distilleval).
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.*"))
	require.NoError(t, err, "no fixtures")
	require.NotEqualValues(t, 0, len(files), "no fixtures: %v", err)
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			res, err := ParseResult(b)
			if strings.HasPrefix(name, "malformed-") {
				require.ErrorIs(t, err, ErrMalformedAnswer, "got %v, want ErrMalformedAnswer", err)
				return
			}
			w, ok := want[name]
			require.True(t, ok, "fixture %s has no expectation", name)
			require.NoError(t, err, "ParseResult")
			var got []string
			for _, o := range res.Operations {
				got = append(got, o.Op+":"+o.Title)
			}
			assert.Equal(t, w, strings.Join(got, "|"), "got %q, want %q", strings.Join(got, "|"), w)
			assert.Equal(t, ResultVersion, res.Version, "got version %d, want %d", res.Version, ResultVersion)
		})
	}
}

func TestParseResultFields(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(fixtureDir, "flex-fields.json"))
	res, err := ParseResult(b)
	require.NoError(t, err)
	o := res.Operations[0]
	assert.False(t, o.Op != payload.OpAdd || o.TargetID != "42" || strings.Join(o.Tags, "|") != "api|rpc|network" ||
		strings.Join(o.EvidenceEventIDs, "|") != "e02" || value(o.Importance) != 2 || value(o.Confidence) != 0.8, "got %+v", o)
	b, _ = os.ReadFile(filepath.Join(fixtureDir, "ops-valid.json"))
	res, err = ParseResult(b)
	require.NoError(t, err)
	s := res.Operations[1]
	assert.False(t, s.TargetID != "m-db" || s.OldQuote != "MySQL 8.0" || s.NewQuote != "we moved to PostgreSQL" || value(s.Confidence) != 0.95, "got %+v", s)
	assert.EqualValues(t, "indentation|缩进", strings.Join(res.Operations[0].Terms, "|"), "got terms %v", res.Operations[0].Terms)
	b, _ = os.ReadFile(filepath.Join(fixtureDir, "legacy-array.json"))
	res, _ = ParseResult(b)
	assert.False(t, res.Operations[2].Content != "我喜欢用 Go 写后端" || res.Operations[1].TargetID != "m-fmt", "got %+v", res.Operations)
}

func TestParseResultErrors(t *testing.T) {
	for _, in := range []string{"", "   ", "null", "42", `"text"`, "{", "[1]", `{"operations":{}}`, `{"memories":[{"tags":{}}]}`,
		`{"operations":[{"confidence":"NaN"}]}`, `{"version":"one","operations":[]}`, "```json\n```"} {
		_, err := ParseResult([]byte(in))
		assert.ErrorIs(t, err, ErrMalformedAnswer, "ParseResult(%q): got %v, want ErrMalformedAnswer", in, err)
	}
	big := make([]byte, MaxAnswerBytes+1)
	_, err := ParseResult(big)
	assert.ErrorIs(t, err, ErrMalformedAnswer, "oversized: got %v", err)
}

// TestResultRoundTrip: what Validate writes reads back the same.
func TestResultRoundTrip(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(fixtureDir, "ops-valid.json"))
	res, err := ParseResult(b)
	require.NoError(t, err)
	out, err := json.Marshal(res)
	require.NoError(t, err)
	again, err := ParseResult(out)
	require.NoError(t, err)
	b1, _ := json.Marshal(again)
	assert.Equal(t, string(out), string(b1), "got %s, want %s", b1, out)
}

// FuzzParseResult: ParseResult never panics on outside bytes, and whatever
// it accepts has an op on every item and goes through Validate.
func FuzzParseResult(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := ParseResult(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedAnswer) {
				t.Fatalf("error not ErrMalformedAnswer: %v", err)
			}
			return
		}
		for _, o := range res.Operations {
			if o.Op == "" {
				t.Fatalf("op without a name: %+v", o)
			}
		}
		ops, _ := Validate(request([]Entry{mysqlEntry}, user(2, "x")), res)
		for _, o := range ops {
			if len([]rune(o.Title)) > MaxTitleRunes || len(o.Tags) > MaxTags || len(o.Terms) > MaxTerms {
				t.Fatalf("caps not applied: %+v", o)
			}
		}
	})
}
