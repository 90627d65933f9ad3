package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"dshmem/sqlstore"
)

// compareVectors compares the vectors of the live index with the
// rebuilt one's, row by row, keyed by what they were made from (kind,
// stream, seq, entry, entry version, model version).
func compareVectors(ctx context.Context, live, rebuilt *sqlstore.Store) ([]Difference, string, error) {
	rows := func(s *sqlstore.Store) (map[string]string, error) {
		var b bytes.Buffer
		if err := s.DumpVectors(ctx, &b); err != nil {
			return nil, err
		}
		out := map[string]string{}
		sc := bufio.NewScanner(&b)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			_, js, _ := bytes.Cut(sc.Bytes(), []byte("\t"))
			var vals []any
			if err := json.Unmarshal(js, &vals); err != nil || len(vals) != 9 {
				return nil, fmt.Errorf("read vectors dump: %q", js)
			}
			key, _ := json.Marshal(append(vals[:5:5], vals[6]))
			val, _ := json.Marshal(vals[7:])
			out[string(key)] = string(val)
		}
		return out, sc.Err()
	}
	a, err := rows(live)
	if err != nil {
		return nil, "", err
	}
	b, err := rows(rebuilt)
	if err != nil {
		return nil, "", err
	}
	same, differ, liveOnly, rebuiltOnly := 0, 0, 0, 0
	var first string
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			liveOnly++
		case v == w:
			same++
		default:
			differ++
			if first == "" || k < first {
				first = k
			}
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			rebuiltOnly++
		}
	}
	note := ""
	if liveOnly+rebuiltOnly > 0 { // every row equal is what "ok" says already
		note = fmt.Sprintf("%d vector rows equal their replay; %d only in the live index, %d only in the replay (the server's fill had not caught up, or has not run since)", same, liveOnly, rebuiltOnly)
	}
	if differ == 0 {
		return nil, note, nil
	}
	return []Difference{{Path: IndexFile, Problem: fmt.Sprintf("%d vector rows differ from their replay (first: %s)", differ, first)}}, note, nil
}
