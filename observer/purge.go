package observer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
	"dshmem/projector"
)

// A purge deletes a workspace scope for good: its log stream (every
// segment), every index row of it, and its projection files; the day
// files (sessions/<day>.md) are rendered again without its blocks. What
// stays is one scope/purge event in the global stream holding the key.
//
// It is crash-safe by a rename. Under the intake lock, with every
// appended event folded:
//
//  1. the stream's directory leaves the log: events.Log.Drop renames it
//     to <root>/purging/<key>.<nonce>/ and fsyncs (the commit point);
//  2. its index rows and projection files are deleted, the day files
//     rendered again, the segments in purging/ removed and the index
//     compacted, so no deleted byte stays in index.db;
//  3. the intake lock is released, the scope/purge event appended (its
//     id holds the nonce, so appending it twice writes it once), and the
//     empty purging/<key>.<nonce>/ removed.
//
// A crash before 1 leaves the scope whole. After it, the next Open finds
// purging/<key>.<nonce>/ and runs 2 and 3 again (each is idempotent);
// step 2's index purge runs only while the log has no stream of that
// key, because once step 2 is done a new event for the directory may
// start a fresh stream with the same key (at seq 1), and that one is not
// to be purged.

// PurgingDir holds, under the root, the log directory of a stream
// whose purge has begun and not ended. Part of the on-disk layout.
const PurgingDir = "purging"

// purgeHook, when set (tests), is called at each step of a purge.
var purgeHook func(step string)

func purgeStep(step string) {
	if purgeHook != nil {
		purgeHook(step)
	}
}

// PurgeScope deletes the workspace scope key for good (see above) and
// reports what it removed. It refuses, writing nothing, the global scope
// (ErrGlobalScope), an unknown key (ErrUnknownScope), and a confirm
// other than the key itself (ErrPurgeUnconfirmed). An archived scope
// and an active one are purged alike.
func (e *Engine) PurgeScope(ctx context.Context, key, confirm string) (PurgeReport, error) {
	if e.log == nil {
		return PurgeReport{}, ErrReadOnly
	}
	if err := e.workspaceKey(key); err != nil {
		return PurgeReport{}, err
	}
	if confirm != key {
		got := "no confirmation"
		if confirm != "" {
			got = fmt.Sprintf("the confirmation %q", confirm)
		}
		return PurgeReport{}, fmt.Errorf("%w: %s is not the key; purging %s deletes its events, entries and files for good — confirm with the key itself (--confirm %s)",
			ErrPurgeUnconfirmed, got, key, key)
	}
	nonce, err := RandomHex()
	if err != nil {
		return PurgeReport{}, err
	}
	trash := filepath.Join(e.root, PurgingDir, key+"."+nonce)

	e.lockSettled()
	rep, err := e.purgeLocked(ctx, key, trash)
	e.mu.Unlock()
	if err != nil {
		return rep, err
	}
	purgeStep("compacted")
	if err := e.purgeRecord(ctx, key, nonce, trash); err != nil {
		return rep, err
	}
	return rep, nil
}

// purgeLocked runs steps 1 and 2 under the intake lock.
func (e *Engine) purgeLocked(ctx context.Context, key, trash string) (PurgeReport, error) {
	rep := PurgeReport{Key: key, Files: []string{}}
	// Files still queued are written first: none of the stream's is
	// left in the queue for the file writer to bring back.
	if err := e.proj.WriteQueued(ctx); err != nil {
		return rep, fmt.Errorf("purge %s: %w", key, err)
	}
	if err := os.MkdirAll(filepath.Dir(trash), 0o700); err != nil {
		return rep, fmt.Errorf("purge %s: %w", key, err)
	}
	purgeStep("drop")
	if err := e.log.Drop(key, trash); err != nil {
		_ = os.Remove(filepath.Dir(trash)) // only if empty
		return rep, fmt.Errorf("purge %s: take its stream out of the log: %w", key, err)
	}
	e.forgetStream(key)
	purgeStep("dropped")
	if err := e.purgeDropped(ctx, key, trash, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// purgeDropped is step 2 for a stream already out of the log: its index
// rows and files, its segments (left in trash), and the index's free
// pages.
func (e *Engine) purgeDropped(ctx context.Context, key, trash string, rep *PurgeReport) error {
	if e.log.LastSeq(key) == 0 {
		for _, d := range projector.ScopeDirs(key) {
			rep.Bytes += treeBytes(filepath.Join(e.root, filepath.FromSlash(d)))
		}
		rows, err := e.proj.Purge(ctx, key)
		if err != nil {
			return fmt.Errorf("purge %s: %w", key, err)
		}
		rep.Events = rows.Events
		rep.Files = append(rep.Files, rows.Files...)
		for _, d := range rows.Days {
			rep.Files = append(rep.Files, projector.DayPath(d))
		}
		slices.Sort(rep.Files)
	}
	purgeStep("rows")
	n, err := removeFiles(trash)
	rep.Bytes += n
	if err != nil {
		return fmt.Errorf("purge %s: remove its segments: %w", key, err)
	}
	if err := e.store.Compact(ctx); err != nil {
		return fmt.Errorf("purge %s: %w", key, err)
	}
	return nil
}

// purgeRecord is step 3: the scope/purge event, then the empty purging
// directory goes.
func (e *Engine) purgeRecord(ctx context.Context, key, nonce, trash string) error {
	raw, err := payload.Marshal(payload.ScopePurge{Key: key})
	if err != nil {
		return err
	}
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:purge:" + key + ":" + nonce, Type: events.TypeScopePurge,
		Time: EventTime(time.Time{}), Stream: GlobalStream, Data: raw}
	if o, err := e.appendOwn(ctx, env); err != nil && o.Status != StatusDuplicate {
		return fmt.Errorf("purge %s: the scope is gone; record it in the global stream: %w", key, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("purge %s: %w", key, err)
	}
	parent := filepath.Dir(trash)
	if err := os.Remove(parent); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNonEmptyDir(parent) {
		return fmt.Errorf("purge %s: %w", key, err)
	}
	if err := markdown.SyncDir(e.root); err != nil {
		return fmt.Errorf("purge %s: sync root: %w", key, err)
	}
	return nil
}

// forgetStream drops what the engine remembers of a stream that left
// the log: its pending ids and every cached scope resolution (a cwd
// that resolved to it, or through it, resolves afresh).
func (e *Engine) forgetStream(stream string) {
	e.pendMu.Lock()
	delete(e.pendingIDs, stream)
	e.pendMu.Unlock()
	e.scopes.mu.Lock()
	e.scopes.m = nil
	e.scopes.mu.Unlock()
}

// interruptedPurge is a purge a crash left behind: purging/<key>.<nonce>.
type interruptedPurge struct{ key, nonce, dir string }

// interruptedPurges lists the purges a crash interrupted.
func interruptedPurges(root string) ([]interruptedPurge, error) {
	ents, err := os.ReadDir(filepath.Join(root, PurgingDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", PurgingDir, err)
	}
	var out []interruptedPurge
	for _, d := range ents {
		key, nonce, ok := strings.Cut(d.Name(), ".")
		if !d.IsDir() || !ok || !IsWorkspaceStream(key) || nonce == "" {
			continue
		}
		out = append(out, interruptedPurge{key: key, nonce: nonce, dir: filepath.Join(root, PurgingDir, d.Name())})
	}
	return out, nil
}

// finishPurges runs, on open, step 2 of each interrupted purge (before
// anything looks at the index's cursors, which still name the purged
// stream) and returns them for finishRecords.
func (e *Engine) finishPurges(ctx context.Context, proj *projector.Projector) ([]interruptedPurge, error) {
	ps, err := interruptedPurges(e.root)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		// A purge killed before its stream left the log leaves only
		// the empty directory; anything else in it is not ours to remove.
		_ = os.Remove(filepath.Join(e.root, PurgingDir))
		return nil, nil
	}
	saved := e.proj
	e.proj = proj
	defer func() { e.proj = saved }()
	for _, p := range ps {
		var rep PurgeReport
		if err := e.purgeDropped(ctx, p.key, p.dir, &rep); err != nil {
			return nil, fmt.Errorf("finish the interrupted purge of %s: %w", p.key, err)
		}
	}
	return ps, nil
}

// finishRecords runs step 3 of the interrupted purges once the engine is
// open.
func (e *Engine) finishRecords(ctx context.Context, ps []interruptedPurge) error {
	for _, p := range ps {
		if err := e.purgeRecord(ctx, p.key, p.nonce, p.dir); err != nil {
			return fmt.Errorf("finish the interrupted purge of %s: %w", p.key, err)
		}
	}
	return nil
}

// treeBytes is the size of the regular files under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// removeFiles removes every file under dir, keeping dir itself (the
// mark that a purge is under way), and returns the bytes removed.
func removeFiles(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	for _, d := range ents {
		p := filepath.Join(dir, d.Name())
		n += treeBytes(p)
		if err := os.RemoveAll(p); err != nil {
			return n, err
		}
	}
	return n, markdown.SyncDir(dir)
}

func isNonEmptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}
