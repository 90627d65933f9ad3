package distill

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretsDir = "../../testdata/secrets"

type corpusCase struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	var out []corpusCase
	for _, line := range readLines(t, "corpus.jsonl") {
		var c corpusCase
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("corpus.jsonl: %v", err)
		}
		out = append(out, c)
	}
	return out
}

// readLines returns the non-blank, non-comment lines of a secrets fixture.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(secretsDir, name))
	if err != nil {
		t.Fatalf("open fixture: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return out
}
