package madial

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// baselineSuffix ends the name of every upstream ranking file, after the
// model name and the language: BGE_M3_dense_zh_top_20_ids.json.
const baselineSuffix = "_top_20_ids.json"

// baselineNames maps upstream file-name prefixes to the retriever names the
// MADial-Bench paper uses. An unlisted prefix is kept as it is.
var baselineNames = map[string]string{
	"BGE_M3_dense":   "BGE-M3",
	"BGE_M3_colbert": "BGE-M3-colbert",
	"Stella":         "Stella",
	"Acge":           "Acge",
	"Dmeta":          "Dmeta",
	"openai":         "OpenAI",
}

// baselineRecord is one line of a ranking file. relevant_id, user-id and
// the dialogue copies are ignored: Evaluate scores against the labels Load
// reads, so ours and the baselines share one source of truth.
type baselineRecord struct {
	ID     *int  `json:"id"`
	Ranked []int `json:"top_20_ids"`
}

// LoadBaselines reads every *_top_20_ids.json ranking file in dir (upstream's
// embeddings/ch, here baselines-zh) and returns, per retriever name
// (BGE-M3, BGE-M3-colbert, Stella, Acge, Dmeta, OpenAI), each case id's
// ranked memory ids, best first.
func LoadBaselines(dir string) (map[string]map[int][]int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+baselineSuffix))
	if err != nil {
		return nil, fmt.Errorf("list baselines in %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("load baselines: no *%s file in %s", baselineSuffix, dir)
	}
	sort.Strings(paths)
	out := make(map[string]map[int][]int, len(paths))
	for _, path := range paths {
		name := baselineName(filepath.Base(path))
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("load baselines: two files for %s in %s", name, dir)
		}
		ranks, err := readBaseline(path)
		if err != nil {
			return nil, err
		}
		out[name] = ranks
	}
	return out, nil
}

// baselineName turns "BGE_M3_dense_zh_top_20_ids.json" into "BGE-M3".
func baselineName(file string) string {
	stem := strings.TrimSuffix(file, baselineSuffix)
	if i := strings.LastIndexByte(stem, '_'); i > 0 {
		stem = stem[:i] // drop the language
	}
	if n, ok := baselineNames[stem]; ok {
		return n
	}
	return stem
}

func readBaseline(path string) (map[int][]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open baseline %s: %w", path, err)
	}
	defer f.Close()
	return decodeBaseline(f, path)
}

// decodeBaseline parses a ranking file; name labels errors.
func decodeBaseline(r io.Reader, name string) (map[int][]int, error) {
	ranks := make(map[int][]int)
	err := eachLine(r, name, func(line []byte) error {
		var r baselineRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.ID == nil {
			return fmt.Errorf("%w: ranking line has no id", ErrShape)
		}
		if _, dup := ranks[*r.ID]; dup {
			return fmt.Errorf("case %d: %w", *r.ID, ErrDuplicateID)
		}
		ranks[*r.ID] = r.Ranked
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ranks, nil
}
