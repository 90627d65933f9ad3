package projector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"dshmem/events"
	"dshmem/markdown"
	"dshmem/sqlstore"
)

// The scope lifecycle (ARCHITECTURE §2, issue 14). scope/archive and
// scope/restore in a workspace's own stream move the scope in and out
// of the recycle bin: the fold marks it (archived_scopes) and queues its
// files, and the file writer renders them under archived/ws-<id>/ while
// it is archived and under scopes/ws-<id>/ while it is not, removing
// what the other place holds. The files are a function of the index, so
// a replay of the log makes the same ones, in the same place, byte for
// byte. An archive or restore event in the global stream (or any stream
// that is not a workspace) changes nothing: the global scope cannot be
// archived.
//
// Events that arrive for an archived scope are folded like any other:
// nothing is lost, the scope stays archived, and its files (under
// archived/) follow them, until a scope/restore.

// movesScope reports whether an event of type typ moves a workspace's
// files between scopes/ and archived/.
func movesScope(typ string) bool {
	return typ == events.TypeScopeArchive || typ == events.TypeScopeRestore
}

// lifecycle folds scope/archive and scope/restore.
func (f *fold) lifecycle(ev *events.Envelope) error {
	if !IsWorkspace(ev.Stream) {
		return nil
	}
	if ev.Type == events.TypeScopeArchive {
		return f.tx.ArchiveScope(ev.Stream, ev.Seq, ev.Time)
	}
	return f.tx.RestoreScope(ev.Stream)
}

// inArchive turns a path under scopes/ into the same path under
// archived/.
func inArchive(rel string) string {
	return ArchivedDir + strings.TrimPrefix(rel, ScopesDir)
}

// renderScopeGroup renders a workspace's files (memory_summary.md,
// scope.json, summary_history/) where the scope now lives, and lists the
// recorded files it no longer has: history versions dropped, and
// everything in the other place (scopes/ when archived, archived/ when
// not).
func renderScopeGroup(ctx context.Context, q sqlstore.Reader, scope string) ([]Rendered, []string, error) {
	rs, err := renderScopeFiles(ctx, q, scope)
	if err != nil {
		return nil, nil, err
	}
	vs, err := summaryVersions(ctx, q, scope)
	if err != nil {
		return nil, nil, err
	}
	archived, err := q.ScopeArchived(ctx, scope)
	if err != nil {
		return nil, nil, err
	}
	here, there := ScopesDir, ArchivedDir
	if archived {
		here, there = ArchivedDir, ScopesDir
		for i := range rs {
			rs[i].Path = inArchive(rs[i].Path)
		}
		for i := range vs {
			vs[i].Path = inArchive(vs[i].Path)
		}
	}
	old, err := filesUnder(ctx, q, here+"/"+scope+"/"+HistoryDir+"/")
	if err != nil {
		return nil, nil, err
	}
	elsewhere, err := filesUnder(ctx, q, there+"/"+scope+"/")
	if err != nil {
		return nil, nil, err
	}
	return append(rs, vs...), append(missing(old, vs), elsewhere...), nil
}

// ScopeDirs are the directories, relative to the root, that hold a
// workspace's projections: scopes/<stream> and archived/<stream>.
func ScopeDirs(stream string) []string {
	return []string{ScopesDir + "/" + stream, ArchivedDir + "/" + stream}
}

// PruneScopeDirs removes the directories of a workspace's projections
// that hold no file any more (left behind when its files moved between
// scopes/ and archived/), innermost first. A directory holding anything
// stays.
func (p *Projector) PruneScopeDirs(stream string) error {
	if p.Root == "" {
		return nil
	}
	for _, d := range ScopeDirs(stream) {
		abs := filepath.Join(p.Root, filepath.FromSlash(d))
		subs := []string{filepath.Join(abs, HistoryDir), abs}
		if strings.HasPrefix(d, ArchivedDir+"/") {
			subs = append(subs, filepath.Dir(abs)) // an empty recycle bin goes too
		}
		for _, sub := range subs {
			err := os.Remove(sub)
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotEmpty(sub) {
				return fmt.Errorf("remove empty directory %s: %w", sub, err)
			}
		}
	}
	return nil
}

// isNotEmpty reports whether dir exists and holds something (os.Remove
// of it failed for that reason, whatever the platform's errno).
func isNotEmpty(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// Purge deletes every row of stream from the index (sqlstore.PurgeStream)
// and its projections from the root: scopes/<stream>/ and
// archived/<stream>/, whole, whatever they hold (a file edited by hand
// included: a purge keeps nothing). Then it writes the queued files, so
// each sessions/<day>.md that held a block of the stream is rendered
// again without it (and removed when none is left). It is idempotent: a
// purge interrupted by a crash is finished by running it again. The
// caller has taken the stream out of the log first (events.Log.Drop) and
// folds nothing of it meanwhile.
func (p *Projector) Purge(ctx context.Context, stream string) (sqlstore.PurgedRows, error) {
	if !IsWorkspace(stream) {
		return sqlstore.PurgedRows{}, fmt.Errorf("projector: purge %q: only a workspace stream (ws-…) can be purged", stream)
	}
	p.filesMu.Lock()
	p.txMu.Lock()
	rows, err := p.s.PurgeStream(ctx, stream)
	p.txMu.Unlock()
	if err == nil && p.Root != "" {
		for _, d := range ScopeDirs(stream) {
			abs := filepath.Join(p.Root, filepath.FromSlash(d))
			if err = os.RemoveAll(abs); err != nil {
				err = fmt.Errorf("remove %s: %w", d, err)
				break
			}
			if err = markdown.SyncDir(filepath.Dir(abs)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("sync directory %s: %w", filepath.Dir(d), err)
				break
			}
			err = nil
		}
	}
	p.filesMu.Unlock()
	if err != nil {
		return rows, err
	}
	if err := p.WriteQueued(ctx); err != nil {
		return rows, err
	}
	return rows, nil
}
