package distill

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
		require.NoError(t, json.Unmarshal([]byte(line), &c), "corpus.jsonl")
		out = append(out, c)
	}
	return out
}

// readLines returns the non-blank, non-comment lines of a secrets fixture.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(secretsDir, name))
	require.NoError(t, err, "open fixture")
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
	require.NoError(t, sc.Err(), "read fixture")
	return out
}
