package dsh

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
)

// sessionFileRE matches a session log name:
//
//	session.jsonl  session.v2.jsonl.zstd  session.1.jsonl   (one per directory: host layout)
//	<name>--session.jsonl  <name>--session.1.jsonl          (each its own session: fixtures)
var sessionFileRE = regexp.MustCompile(`^(?:(.+)--)?session(?:\.v?(\d+))?\.jsonl(\.zstd|\.zst)?$`)

type sessionFile struct {
	path string
	gen  int
	zstd bool
}

// better reports whether a should be read instead of b: the higher
// generation, then zstd (the host's default) over plain JSONL.
func (a sessionFile) better(b sessionFile) bool {
	if a.gen != b.gen {
		return a.gen > b.gen
	}
	return a.zstd && !b.zstd
}

// FindSessions lists the session logs under root, one per session, sorted
// by path: in each directory the highest generation of
// session[.vN].jsonl[.zstd]; every "<name>--session….jsonl[.zstd]" file on
// its own. root may also be a single session file.
func FindSessions(root string) ([]string, error) {
	best := map[string]sessionFile{} // by directory
	var flat []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		m := sessionFileRE.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		if m[1] != "" {
			flat = append(flat, path)
			return nil
		}
		gen := 0
		if m[2] != "" {
			g, err := strconv.Atoi(m[2])
			if err != nil {
				return nil // absurdly long number: not a name the host writes
			}
			gen = g
		}
		f := sessionFile{path: path, gen: gen, zstd: m[3] != ""}
		dir := filepath.Dir(path)
		if cur, ok := best[dir]; !ok || f.better(cur) {
			best[dir] = f
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find sessions under %s: %w", root, err)
	}
	paths := flat
	for _, f := range best {
		paths = append(paths, f.path)
	}
	sort.Strings(paths)
	return paths, nil
}
