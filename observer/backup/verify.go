package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"dshmem/events"
	"dshmem/sqlstore"
)

// VerifyReport is what Verify found. Its JSON form is what
// `dshmem backup verify --json` prints.
type VerifyReport struct {
	Dir        string   `json:"dir"`
	Generation uint64   `json:"generation"`
	Created    string   `json:"created"`
	Files      int      `json:"files"` // files checked, the index snapshot included
	Bytes      int64    `json:"bytes"`
	Streams    int      `json:"streams"`
	Events     uint64   `json:"events"`   // events the copied log holds
	Problems   []string `json:"problems"` // empty: the backup is sound
	Notes      []string `json:"notes"`    // what is there beside the backup, harmless
}

// OK reports whether Verify found no problem.
func (r VerifyReport) OK() bool { return len(r.Problems) == 0 }

// Verify checks a backup directory: every file the manifest names is
// there with its size and sha256, the copied log verifies
// (events.Verify: frames, seqs, hash chain, seals) and holds each
// stream up to the seq the manifest says, and the index snapshot
// reflects no more than the log holds. It changes nothing. The error is
// for a directory that holds no readable manifest; problems are in the
// report.
func Verify(ctx context.Context, dir string) (VerifyReport, error) {
	rep := VerifyReport{Dir: dir, Problems: []string{}, Notes: []string{}}
	m, err := ReadManifest(dir)
	if err != nil {
		return rep, err
	}
	rep.Generation, rep.Created = m.Generation, m.Created
	problem := func(format string, args ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(format, args...)) }
	interrupted := false // a copy is interrupted than its record (an interrupted run)

	check := func(rel string, size int64, sum string) {
		rep.Files++
		rep.Bytes += size
		p := filepath.Join(dir, filepath.FromSlash(rel))
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			problem("%s is missing", rel)
			return
		case err != nil:
			problem("%s: %v", rel, err)
			return
		case st.Size() < size:
			problem("%s is %d bytes, the manifest says %d", rel, st.Size(), size)
			return
		}
		got, err := hashPrefix(p, size)
		switch {
		case err != nil:
			problem("%s: %v", rel, err)
		case got != sum:
			problem("%s does not match the manifest: sha256 %s, want %s (its bytes changed since the backup)", rel, got, sum)
		case st.Size() > size:
			// A segment only grows: an interrupted run renamed a interrupted
			// copy into place before it could write the manifest. Restore
			// reads the first size bytes, which are the ones recorded.
			interrupted = true
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s holds %d bytes past the %d the manifest records (an interrupted backup; restore uses the recorded ones, the next backup records the rest)", rel, st.Size()-size, size))
		}
	}
	if m.Index == nil {
		problem("the manifest names no index snapshot")
	} else {
		check(m.Index.Path, m.Index.Size, m.Index.SHA256)
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		listed[f.Path] = true
		check(f.Path, f.Size, f.SHA256)
	}

	// The copied log as a log.
	logDir := filepath.Join(dir, LogDir)
	filepath.WalkDir(logDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if rel = filepath.ToSlash(rel); !listed[rel] {
			interrupted = true
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is not in the manifest (left by an interrupted backup? the next backup removes it)", rel))
		}
		return nil
	})
	problems, checked, err := events.VerifyCounted(logDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		problem("verify the copied log: %v", err)
	}
	for _, p := range problems {
		problem("log: %s", p)
	}
	rep.Streams, rep.Events = checked.Streams, checked.Events
	if len(problems) == 0 && err == nil {
		if lg, err := events.OpenLogReadOnly(logDir, events.Options{}); err != nil {
			problem("open the copied log: %v", err)
		} else {
			for _, s := range sortedKeys(m.Streams) {
				if got := lg.LastSeq(s); got < m.Streams[s] || got > m.Streams[s] && !interrupted {
					problem("stream %s: the copied log ends at seq %d, the manifest says %d", s, got, m.Streams[s])
				}
			}
			for _, s := range lg.Streams() {
				if _, ok := m.Streams[s]; !ok && !interrupted {
					problem("stream %s is in the copied log but not in the manifest", s)
				}
			}
			lg.Close()
		}
	}
	if m.Index != nil {
		for _, s := range sortedKeys(m.Index.Cursors) {
			if c := m.Index.Cursors[s]; c > m.Streams[s] {
				problem("the index snapshot reflects stream %s up to seq %d, past the log's seq %d", s, c, m.Streams[s])
			}
		}
		if len(rep.Problems) == 0 {
			if got, err := sqlstore.SnapshotCursors(filepath.Join(dir, m.Index.Path)); err != nil {
				problem("read the index snapshot %s: %v", m.Index.Path, err)
			} else if !equalCursors(got, m.Index.Cursors) {
				problem("the index snapshot %s holds cursors %v, the manifest says %v", m.Index.Path, got, m.Index.Cursors)
			}
		}
	}
	return rep, nil
}

func equalCursors(a, b map[string]uint64) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if v != 0 && a[k] != v {
			return false
		}
	}
	return true
}
