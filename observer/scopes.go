package observer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore"
)

// The scope lifecycle (ARCHITECTURE §2, issue 14): list the scopes of a
// root, move a workspace scope to the recycle bin and back, purge it for
// good. Archive and restore are events in the scope's own stream
// (scope/archive, scope/restore), folded like any other, so replay
// reproduces them; purge removes the stream itself (purge.go).
//
// An archived scope is left out of recall, search, the session-start
// context and packets; its files live under archived/ws-<id>/. Events
// that arrive for it (a session in its directory) are appended and
// folded as always — nothing is lost — and the scope stays archived
// until it is restored.

// Errors of the scope lifecycle; each is returned wrapped, with the key.
var (
	// ErrUnknownScope: the key or directory names no scope of the root.
	ErrUnknownScope = errors.New("no such scope")
	// ErrGlobalScope: the global scope cannot be archived or purged.
	ErrGlobalScope = errors.New("the global scope cannot be archived or purged")
	// ErrScopeArchived: archiving a scope that is archived already.
	ErrScopeArchived = errors.New("scope already archived")
	// ErrScopeNotArchived: restoring a scope that is not archived.
	ErrScopeNotArchived = errors.New("scope not archived")
	// ErrPurgeUnconfirmed: a purge whose confirmation is not the key.
	ErrPurgeUnconfirmed = errors.New("purge not confirmed")
)

// Entry statuses a ScopeInfo counts, in the order people read them.
var scopeStatuses = []string{payload.StatusActive, payload.StatusConflict, payload.StatusSuperseded, payload.StatusForgotten}

// ScopeInfo describes one scope of a root. Its JSON form is what
// `dshmem scopes list --json` prints and GET /v1/scopes returns.
type ScopeInfo struct {
	Key          string         `json:"key"`          // "global" or "ws-<20 hex>"
	Dir          string         `json:"dir"`          // the workspace directory ("" for global)
	Archived     bool           `json:"archived"`     //
	Entries      map[string]int `json:"entries"`      // count by status: active, conflict, superseded, forgotten
	Sessions     int            `json:"sessions"`     //
	Checkpoints  int            `json:"checkpoints"`  // memory/ops events (distiller checkpoints and hand-edit syncs)
	Bytes        int64          `json:"bytes"`        // the stream's segments on disk
	LastActivity string         `json:"lastActivity"` // RFC 3339 time of the newest event, "" if none
	Events       uint64         `json:"events"`       // events in the stream (folded)
}

// PurgeReport is what PurgeScope removed.
type PurgeReport struct {
	Key    string   `json:"key"`
	Events int      `json:"events"` // events removed with the stream
	Files  []string `json:"files"`  // root-relative files removed or re-rendered
	Bytes  int64    `json:"bytes"`  // bytes removed from disk (segments and projection files)
}

// Scopes lists the active scopes (archived=false: the global scope and
// every workspace not archived) or the recycle bin (archived=true),
// sorted by key. Only scopes with events are listed. One grouped query
// over the index, and the log's segment sizes.
func (e *Engine) Scopes(ctx context.Context, archived bool) ([]ScopeInfo, error) {
	rows, err := e.store.ScopeRows(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []ScopeInfo{}
	for _, r := range rows {
		if r.Archived != archived {
			continue
		}
		out = append(out, e.scopeInfo(r))
	}
	return out, nil
}

// ScopeInfo describes the scope key ("global" or "ws-…"); an unknown
// key is an error wrapping ErrUnknownScope.
func (e *Engine) ScopeInfo(ctx context.Context, key string) (ScopeInfo, error) {
	rows, err := e.store.ScopeRows(ctx, key)
	if err != nil {
		return ScopeInfo{}, err
	}
	if len(rows) == 0 {
		if e.HasStream(key) {
			// In the log, not folded yet (a read-only engine beside a
			// writer): what the log alone says.
			return e.scopeInfo(sqlstore.ScopeRow{Stream: key, Dir: e.ScopeDir(key)}), nil
		}
		return ScopeInfo{}, unknownScope(key)
	}
	return e.scopeInfo(rows[0]), nil
}

func (e *Engine) scopeInfo(r sqlstore.ScopeRow) ScopeInfo {
	si := ScopeInfo{Key: r.Stream, Dir: NormalizeCwd(r.Dir), Archived: r.Archived, Entries: map[string]int{},
		Sessions: r.Sessions, Checkpoints: r.Checkpoints, LastActivity: r.LastActivity, Events: r.Events}
	if r.Stream == GlobalStream {
		si.Dir = ""
	}
	for _, s := range scopeStatuses {
		si.Entries[s] = r.Entries[s]
	}
	si.Bytes = e.streamBytes(r.Stream)
	return si
}

// streamBytes is the size of a stream's segments: from the open log, or
// (read-only) from the files.
func (e *Engine) streamBytes(stream string) int64 {
	if e.log != nil {
		n, _ := e.log.StreamBytes(stream)
		return n
	}
	ents, err := os.ReadDir(filepath.Join(e.root, LogDir, stream))
	if err != nil {
		return 0
	}
	var n int64
	for _, d := range ents {
		if !strings.HasSuffix(d.Name(), ".jsonl.zst") {
			continue
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func unknownScope(arg string) error {
	return fmt.Errorf("%w: %s (list the scopes with 'dshmem scopes list', the recycle bin with 'dshmem scopes list --archived')", ErrUnknownScope, arg)
}

// ScopeKey turns a key ("global", "ws-…") or a workspace directory (an
// absolute path: the scope it is, or lies in) into a known scope's key;
// a clear error wrapping ErrUnknownScope when the root has no such
// scope.
func (e *Engine) ScopeKey(arg string) (string, error) {
	arg = strings.TrimSpace(arg)
	switch {
	case arg == "":
		return "", fmt.Errorf("%w: no key or directory given (a key is global or ws-<20 hex digits>)", ErrUnknownScope)
	case arg == GlobalStream:
		return GlobalStream, nil
	case ValidStream(arg):
		if !e.knownScope(arg) {
			return "", unknownScope(arg)
		}
		return arg, nil
	case strings.HasPrefix(arg, "ws-"):
		return "", fmt.Errorf("%w: %q is not a scope key (ws- and 20 lowercase hex digits)", ErrUnknownScope, arg)
	}
	if !IsAbsCwd(arg) {
		return "", fmt.Errorf("%w: directory %q is relative; give an absolute path or a scope key", ErrUnknownScope, arg)
	}
	if own := StreamForCwd(arg); e.knownScope(own) {
		return own, nil
	}
	if s := e.Scope(arg); e.knownScope(s.Stream) {
		return s.Stream, nil
	}
	return "", unknownScope(NormalizeCwd(arg))
}

// knownScope reports whether stream has events in the log or rows in the
// index.
func (e *Engine) knownScope(stream string) bool {
	if e.HasStream(stream) {
		return true
	}
	folded, err := e.store.Reader().Folded(context.Background(), stream)
	return err == nil && folded
}

// ScopeArchived reports whether the scope stream is in the recycle bin.
func (e *Engine) ScopeArchived(stream string) bool {
	if e.store == nil || !IsWorkspaceStream(stream) {
		return false
	}
	a, err := e.store.Reader().ScopeArchived(context.Background(), stream)
	return err == nil && a
}

// ArchiveScope moves the workspace scope key to the recycle bin: it
// writes a scope/archive event into the scope's stream and returns the
// scope as it now is, its files under archived/. The global scope
// (ErrGlobalScope), an unknown key (ErrUnknownScope) and a scope
// archived already (ErrScopeArchived) are refused before anything is
// written.
func (e *Engine) ArchiveScope(ctx context.Context, key string) (ScopeInfo, error) {
	return e.moveScope(ctx, key, events.TypeScopeArchive)
}

// RestoreScope takes the workspace scope key out of the recycle bin (a
// scope/restore event) and returns it as it now is. A scope that is not
// archived is refused (ErrScopeNotArchived).
func (e *Engine) RestoreScope(ctx context.Context, key string) (ScopeInfo, error) {
	return e.moveScope(ctx, key, events.TypeScopeRestore)
}

func (e *Engine) moveScope(ctx context.Context, key, typ string) (ScopeInfo, error) {
	if e.log == nil {
		return ScopeInfo{}, ErrReadOnly
	}
	if err := e.workspaceKey(key); err != nil {
		return ScopeInfo{}, err
	}
	archived := e.ScopeArchived(key)
	switch {
	case typ == events.TypeScopeArchive && archived:
		return ScopeInfo{}, fmt.Errorf("%w: %s is in the recycle bin; 'dshmem scopes restore %s' brings it back", ErrScopeArchived, key, key)
	case typ == events.TypeScopeRestore && !archived:
		return ScopeInfo{}, fmt.Errorf("%w: %s is not in the recycle bin (see 'dshmem scopes list --archived')", ErrScopeNotArchived, key)
	}
	raw, err := payload.Marshal(payload.ScopeArchive{})
	if err != nil {
		return ScopeInfo{}, err
	}
	rid, err := RandomHex()
	if err != nil {
		return ScopeInfo{}, err
	}
	verb := strings.TrimPrefix(typ, "scope/")
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:" + verb + ":" + rid, Type: typ,
		Time: EventTime(time.Time{}), Stream: key, Data: raw}
	if _, err := e.appendOwn(ctx, env); err != nil {
		return ScopeInfo{}, fmt.Errorf("%s scope %s: %w", verb, key, err)
	}
	// The files move now, not at the file writer's next turn: the
	// caller looks for them next.
	if err := e.WriteFiles(ctx); err != nil {
		return ScopeInfo{}, fmt.Errorf("%s scope %s: the event is in the log; move its files: %w", verb, key, err)
	}
	if err := e.proj.PruneScopeDirs(key); err != nil {
		return ScopeInfo{}, fmt.Errorf("%s scope %s: %w", verb, key, err)
	}
	return e.ScopeInfo(ctx, key)
}

// workspaceKey checks that key names a known workspace scope.
func (e *Engine) workspaceKey(key string) error {
	if key == GlobalStream {
		return fmt.Errorf("%w (it holds what is true in every workspace)", ErrGlobalScope)
	}
	if !IsWorkspaceStream(key) {
		return fmt.Errorf("%w: %q is not a scope key (global or ws- and 20 lowercase hex digits; 'dshmem scopes list' shows them)", ErrUnknownScope, key)
	}
	if !e.knownScope(key) {
		return unknownScope(key)
	}
	return nil
}
