// Package enginetest holds what the tests of the observer packages share:
// comparisons of a live index with one folded afresh from its log.
package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// Engine is what IndexDumps reads of an open engine (*observer.Engine);
// an interface, so that the observer package's own tests can use it.
type Engine interface {
	Store() *sqlstore.Store
	Log() *events.Log
}

// IndexDumps returns the canonical dump of eng's live index and of an
// index folded afresh from its log (projector.Dump leaves out the rows
// that record Markdown files: a bare projector writes none).
func IndexDumps(t testing.TB, eng Engine) (live, fresh []byte) {
	t.Helper()
	ctx := context.Background()
	var lb, fb bytes.Buffer
	if err := projector.Dump(ctx, eng.Store(), &lb); err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := projector.New(st).CatchUp(ctx, eng.Log(), nil); err != nil {
		t.Fatal(err)
	}
	if err := projector.Dump(ctx, st, &fb); err != nil {
		t.Fatal(err)
	}
	return lb.Bytes(), fb.Bytes()
}

// Mkdirs creates each directory (relative to base) and, for a name ending
// in "/.git" or "/.git-file", a .git directory or a .git file (as a git
// worktree or submodule has).
func Mkdirs(t testing.TB, base string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		p := filepath.Join(base, filepath.FromSlash(d))
		if dir, ok := strings.CutSuffix(p, ".git-file"); ok {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere/.git/worktrees/x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// Open opens root for writing and closes it when the test ends.
func Open(t testing.TB, root string) *observer.Engine {
	t.Helper()
	eng, err := observer.Open(context.Background(), root, observer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// Ingest ingests lines and fails the test if the call fails or a line is
// rejected.
func Ingest(t testing.TB, eng *observer.Engine, lines [][]byte) observer.IngestResult {
	t.Helper()
	res, outs, err := eng.Ingest(context.Background(), lines)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if o.Status == observer.StatusRejected {
			t.Fatalf("line %d rejected: %v", o.Line, o.Error)
		}
	}
	return res
}

// Conv is the intake lines of one host session in cwd: a start, a user
// message that names what it is about, an assistant answer.
func Conv(session, cwd, text string) [][]byte {
	var out [][]byte
	for _, l := range []string{
		`{"id":"%[1]s:0","type":"session/start","time":"2026-08-18T10:00:00Z","session":"%[1]s","cwd":%[2]q,"data":{"origin":"top"}}`,
		`{"id":"%[1]s:1","type":"user/message","time":"2026-08-18T10:00:01Z","session":"%[1]s","data":{"text":%[3]q}}`,
		`{"id":"%[1]s:2","type":"assistant/message","time":"2026-08-18T10:00:02Z","session":"%[1]s","data":{"text":"Noted."}}`,
	} {
		out = append(out, []byte(fmt.Sprintf(l, session, cwd, text)))
	}
	return out
}
