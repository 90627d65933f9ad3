package observer

import (
	"context"
	"os"
	"path/filepath"
	"sync"

	"dshmem/events"
	"dshmem/events/payload"
)

// scopeCacheMax bounds the engine's cache of resolved working directories;
// past it the cache starts again empty (a host rarely has more than a few
// hundred directories).
const scopeCacheMax = 4096

// scopeCache remembers, per normalized cwd, a scope whose stream exists:
// streams are never removed from a log, so such an answer stays true (the
// cwd itself, or an ancestor, is a scope) and the filesystem need not be
// walked again for every event. Answers naming a stream that does not
// exist yet are not kept: the stream may be created by the next event.
type scopeCache struct {
	mu sync.Mutex
	m  map[string]Scope
}

func (c *scopeCache) get(norm string) (Scope, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[norm]
	return s, ok
}

func (c *scopeCache) put(norm string, s Scope) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= scopeCacheMax {
		c.m = map[string]Scope{}
	}
	c.m[norm] = s
}

// Scope returns the scope of cwd in this root (Resolver): the cwd's own
// scope when it is one, else the nearest ancestor scope or repository
// root, else the cwd. "" is the global scope. The CLI and the HTTP API
// turn every cwd into a scope with it, as intake does.
func (e *Engine) Scope(cwd string) Scope {
	return e.resolveScope(cwd, nil)
}

// resolveScope is Scope, where the streams of created (stream → directory,
// the scopes intake is creating in the current call) count as existing.
func (e *Engine) resolveScope(cwd string, created map[string]string) Scope {
	norm := NormalizeCwd(cwd)
	if norm == "" {
		return Scope{Stream: GlobalStream}
	}
	if s, ok := e.scopes.get(norm); ok {
		return s
	}
	r := Resolver{Known: func(stream string) bool {
		if _, ok := created[stream]; ok {
			return true
		}
		return e.HasStream(stream)
	}}
	s := r.Resolve(norm)
	if e.HasStream(s.Stream) {
		e.scopes.put(norm, s)
	}
	return s
}

// HasStream reports whether the root's log holds events of stream.
func (e *Engine) HasStream(stream string) bool {
	if e.log != nil {
		if e.log.LastSeq(stream) > 0 {
			return true
		}
		// Appends are queued under mu and written after it: a stream whose
		// first batch waits for its fsync exists already for the calls
		// queued behind it.
		e.pendMu.Lock()
		defer e.pendMu.Unlock()
		return len(e.pendingIDs[stream]) > 0
	}
	// A read-only engine has no log open: a stream is a directory of it.
	fi, err := os.Stat(filepath.Join(e.root, LogDir, stream))
	return err == nil && fi.IsDir()
}

// ScopeDir returns the directory of a workspace stream as scope.json
// records it (the scopes table), or "" when the index knows none.
func (e *Engine) ScopeDir(stream string) string {
	if e.store == nil || !IsWorkspaceStream(stream) {
		return ""
	}
	d, err := e.store.Reader().Scope(context.Background(), stream)
	if err != nil {
		return ""
	}
	return NormalizeCwd(d.Cwd)
}

// registerEvent is the scope/register event intake writes first into a
// workspace stream it creates when the stream's first event does not
// name the scope's directory (a session started in a subdirectory, or an
// event whose cwd came from its session): it records the directory, so
// scope.json holds the scope's directory (projector/files.go) and not
// the cwd of whatever event happened to come first. A stream whose first
// event's cwd is the directory needs none: the projector takes the first
// cwd, as it always has, and the seqs of such a stream are what they
// were before scopes had directories. Its id derives from the stream and
// its time is that of the first event, so the log alone determines it.
func registerEvent(stream, dir, at string) events.Envelope {
	raw, _ := payload.Marshal(payload.ScopeRegister{Dir: dir}) // a struct of one string: cannot fail
	return events.Envelope{V: events.CurrentVersion, Stream: stream, ID: "dshmem:scope:" + stream,
		Type: events.TypeScopeRegister, Time: at, Cwd: dir, Data: raw}
}
