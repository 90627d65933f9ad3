package projector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/sqlstore"
)

// The Markdown files are written after the fold that changed them has
// committed, from projection_queue: a fold queues the groups of files it
// changed in its own transaction, and WriteQueued renders each queued
// group from the index as it then stands (the newest state wins), writes
// the files that differ and takes the group off the queue. A crash
// between the commit and the write leaves the group queued; Open writes
// it (RepairFiles). Rendering reads one snapshot of the index, so every
// file of a write agrees with the others and with its files row.

// Group keys of projection_queue. Part of the index format.
const (
	groupGlobal = "global" // global.md, index.md, knowledge/
	groupScope  = "scope/" // + stream: memory_summary.md, scope.json, summary_history/
	groupDay    = "day/"   // + YYYY-MM-DD: sessions/<day>.md
)

// groupOf names the group whose write renders the projection path rel.
func groupOf(rel string) (string, bool) {
	info, ok := ParsePath(rel)
	if !ok {
		return "", false
	}
	switch info.Kind {
	case KindGlobal, KindIndex, KindKnowledge:
		return groupGlobal, true
	case KindSummary, KindScope, KindHistory:
		return groupScope + info.Scope, true
	case KindDay:
		return groupDay + info.Day, true
	}
	return "", false
}

// enqueue queues groups outside a fold.
func (p *Projector) enqueue(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	return p.record(func() error { return p.s.QueueFiles(ctx, keys) })
}

// Queued reports whether any group of files waits to be written.
func (p *Projector) Queued(ctx context.Context) (bool, error) {
	n, err := p.s.QueuedFiles(ctx)
	return n > 0, err
}

// WriteQueued renders every queued group of files from one snapshot of
// the index and writes them (see put). A group queued again while this
// runs stays queued for the next call.
func (p *Projector) WriteQueued(ctx context.Context) error {
	if p.Root == "" {
		return nil
	}
	p.filesMu.Lock()
	defer p.filesMu.Unlock()
	rs, gone, done, err := p.renderQueued(ctx)
	if err != nil {
		return fmt.Errorf("write Markdown files: %w", err)
	}
	if err := p.put(ctx, rs, gone, nil, done); err != nil {
		return fmt.Errorf("write Markdown files: %w", err)
	}
	return nil
}

// renderQueued reads the queue and renders its groups in one read
// transaction, so they all show the same moment of the index.
func (p *Projector) renderQueued(ctx context.Context) (rs []Rendered, gone []string, done []sqlstore.QueuedGroup, err error) {
	tx, err := p.s.BeginRead(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer tx.Close()
	if done, err = tx.FileQueue(ctx); err != nil {
		return nil, nil, nil, err
	}
	for _, q := range done {
		grs, ggone, err := renderGroup(ctx, tx.Reader, q.Key)
		if err != nil {
			return nil, nil, nil, err
		}
		rs = append(rs, grs...)
		gone = append(gone, ggone...)
	}
	return rs, gone, done, nil
}

// renderGroup renders the files of one group and lists the recorded
// files of the group that it no longer has.
func renderGroup(ctx context.Context, q sqlstore.Reader, key string) ([]Rendered, []string, error) {
	switch {
	case key == groupGlobal:
		return renderGlobalFiles(ctx, q)
	case strings.HasPrefix(key, groupScope):
		return renderScopeGroup(ctx, q, strings.TrimPrefix(key, groupScope))
	case strings.HasPrefix(key, groupDay):
		day := strings.TrimPrefix(key, groupDay)
		r, err := renderDay(ctx, q, day)
		if err != nil {
			return nil, nil, err
		}
		if len(r.Meta.Positions) == 0 {
			// No block that day (any more: a purged scope's blocks are
			// gone): a file written before goes.
			old, err := filesUnder(ctx, q, DayPath(day))
			if err != nil {
				return nil, nil, err
			}
			return nil, old, nil
		}
		return []Rendered{r}, nil, nil
	}
	return nil, nil, fmt.Errorf("projection queue holds unknown group %q", key)
}

// summaryVersions returns the kept summary versions of scope as files.
func summaryVersions(ctx context.Context, q sqlstore.Reader, scope string) ([]Rendered, error) {
	vs, err := q.SummaryVersions(ctx, scope)
	if err != nil {
		return nil, err
	}
	var out []Rendered
	for _, v := range vs {
		out = append(out, Rendered{Path: HistoryPath(scope, v.Seq), Data: []byte(v.Content),
			Meta: FileMeta{Stream: scope, Seq: v.Seq, Time: v.Time}})
	}
	return out, nil
}

// RepairFiles brings the files up to the index on open: it queues the
// group of every recorded file that is missing from disk, then writes
// every queued group, including those a crash left queued after their
// fold committed. A root whose files table is empty though the index
// holds events (made before the files existed) gets every file
// (Refresh). It reads the files table and stats each recorded file; it
// renders only what is queued.
func (p *Projector) RepairFiles(ctx context.Context) error {
	if p.Root == "" {
		return nil
	}
	paths, err := p.s.FilePaths(ctx)
	if err != nil {
		return fmt.Errorf("repair files: %w", err)
	}
	if len(paths) == 0 {
		cursors, err := p.s.Cursors()
		if err != nil {
			return fmt.Errorf("repair files: %w", err)
		}
		for _, c := range cursors {
			if c > 0 {
				return p.Refresh(ctx)
			}
		}
	}
	var keys []string
	for _, rel := range paths {
		_, err := os.Lstat(filepath.Join(p.Root, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			if k, ok := groupOf(rel); ok && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		} else if err != nil {
			return fmt.Errorf("repair files: %w", err)
		}
	}
	if err := p.enqueue(ctx, keys); err != nil {
		return fmt.Errorf("repair files: %w", err)
	}
	return p.WriteQueued(ctx)
}
