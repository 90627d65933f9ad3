package distill

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events/payload"
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
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ParseResult(b)
			if strings.HasPrefix(name, "malformed-") {
				if !errors.Is(err, ErrMalformedAnswer) {
					t.Fatalf("got %v, want ErrMalformedAnswer", err)
				}
				return
			}
			w, ok := want[name]
			if !ok {
				t.Fatalf("fixture %s has no expectation", name)
			}
			if err != nil {
				t.Fatalf("ParseResult: %v", err)
			}
			var got []string
			for _, o := range res.Operations {
				got = append(got, o.Op+":"+o.Title)
			}
			if strings.Join(got, "|") != w {
				t.Errorf("got %q, want %q", strings.Join(got, "|"), w)
			}
			if res.Version != ResultVersion {
				t.Errorf("got version %d, want %d", res.Version, ResultVersion)
			}
		})
	}
}

func TestParseResultFields(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(fixtureDir, "flex-fields.json"))
	res, err := ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	o := res.Operations[0]
	if o.Op != payload.OpAdd || o.TargetID != "42" || strings.Join(o.Tags, "|") != "api|rpc|network" ||
		strings.Join(o.EvidenceEventIDs, "|") != "e02" || value(o.Importance) != 2 || value(o.Confidence) != 0.8 {
		t.Errorf("got %+v", o)
	}
	b, _ = os.ReadFile(filepath.Join(fixtureDir, "ops-valid.json"))
	res, err = ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Operations[1]
	if s.TargetID != "m-db" || s.OldQuote != "MySQL 8.0" || s.NewQuote != "we moved to PostgreSQL" || value(s.Confidence) != 0.95 {
		t.Errorf("got %+v", s)
	}
	if strings.Join(res.Operations[0].Terms, "|") != "indentation|缩进" {
		t.Errorf("got terms %v", res.Operations[0].Terms)
	}
	b, _ = os.ReadFile(filepath.Join(fixtureDir, "legacy-array.json"))
	res, _ = ParseResult(b)
	if res.Operations[2].Content != "我喜欢用 Go 写后端" || res.Operations[1].TargetID != "m-fmt" {
		t.Errorf("got %+v", res.Operations)
	}
}

func TestParseResultErrors(t *testing.T) {
	for _, in := range []string{"", "   ", "null", "42", `"text"`, "{", "[1]", `{"operations":{}}`, `{"memories":[{"tags":{}}]}`,
		`{"operations":[{"confidence":"NaN"}]}`, `{"version":"one","operations":[]}`, "```json\n```"} {
		if _, err := ParseResult([]byte(in)); !errors.Is(err, ErrMalformedAnswer) {
			t.Errorf("ParseResult(%q): got %v, want ErrMalformedAnswer", in, err)
		}
	}
	big := make([]byte, MaxAnswerBytes+1)
	if _, err := ParseResult(big); !errors.Is(err, ErrMalformedAnswer) {
		t.Errorf("oversized: got %v", err)
	}
}

// TestResultRoundTrip: what Validate writes reads back the same.
func TestResultRoundTrip(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join(fixtureDir, "ops-valid.json"))
	res, err := ParseResult(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseResult(out)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(again)
	if string(b1) != string(out) {
		t.Errorf("got %s, want %s", b1, out)
	}
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
