package observer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"dshmem/events"
	"dshmem/projector"
)

// GlobalStream is the stream of events that carry no working directory.
const GlobalStream = "global"

// streamIDHexLen is how many hex digits of sha256(normalized cwd) name a
// workspace stream. Part of the on-disk format (directory names under log/
// and scopes/) and shared with dsh-workspace-memory; do not change.
const streamIDHexLen = 20

// NormalizeCwd returns the canonical form of a working directory, the form
// that is hashed into a stream name (ARCHITECTURE §2):
//
//   - `\` becomes `/`;
//   - the path is cleaned: repeated slashes, `.` and `..` elements go, as
//     Node's path.resolve does for an absolute path;
//   - no trailing slash, except for a root (`/`, `c:/`);
//   - a path that starts with a drive letter (`C:/`, `c:\`) is lower-cased
//     whole, because Windows paths are case-insensitive and the host may
//     report the same directory as `C:\Users\X` or `c:\users\x`.
//
// "" stays "". A relative path is cleaned but stays relative; Validate
// rejects an envelope whose cwd is relative, because the engine cannot know
// what it was relative to. UNC paths (`\\host\share`) get no special case:
// their leading double slash collapses like any POSIX path's.
func NormalizeCwd(cwd string) string {
	if cwd == "" {
		return ""
	}
	p := strings.ReplaceAll(cwd, `\`, "/")
	if len(p) > 2 && hasDriveLetter(p) {
		// Clean the part after "c:" as a rooted path, so that "C:\" keeps
		// its slash (bare "c:" means the current directory on drive C)
		// and ".." cannot climb above the drive root.
		return strings.ToLower(p[:2] + path.Clean(p[2:]))
	}
	if hasDriveLetter(p) {
		p = strings.ToLower(p) // a bare "C:"
	}
	return path.Clean(p)
}

// hasDriveLetter reports whether p (already using forward slashes) starts
// with a Windows drive letter followed by a slash or nothing: "C:/x", "c:".
func hasDriveLetter(p string) bool {
	if len(p) < 2 || p[1] != ':' {
		return false
	}
	c := p[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	return len(p) == 2 || p[2] == '/'
}

// IsAbsCwd reports whether cwd is absolute once normalized: a POSIX path
// from the root, or a Windows path from a drive root.
func IsAbsCwd(cwd string) bool { return isAbsCwd(NormalizeCwd(cwd)) }

// isAbsCwd reports whether a normalized cwd is absolute: a POSIX path from
// the root, or a Windows path from a drive root.
func isAbsCwd(norm string) bool {
	return strings.HasPrefix(norm, "/") || len(norm) >= 3 && hasDriveLetter(norm)
}

// StreamForCwd names the stream of a working directory: "global" for "",
// otherwise "ws-" followed by the first 20 hex digits of the sha256 of
// NormalizeCwd(cwd).
func StreamForCwd(cwd string) string {
	norm := NormalizeCwd(cwd)
	if norm == "" {
		return GlobalStream
	}
	sum := sha256.Sum256([]byte(norm))
	return "ws-" + hex.EncodeToString(sum[:])[:streamIDHexLen]
}

// ValidStream reports whether s is a stream name: "global" or "ws-"
// followed by exactly 20 lowercase hex digits.
func ValidStream(s string) bool {
	return s == GlobalStream || projector.IsWorkspace(s)
}

// Scope is where the memory of a working directory lives: a directory
// and the stream named for it. The global scope has no directory.
type Scope struct {
	Dir    string // normalized (NormalizeCwd); "" for the global scope
	Stream string // StreamForCwd(Dir)
}

// String names the scope for people: the directory, then the stream
// ("/home/u/proj (ws-…)"), or "global".
func (s Scope) String() string {
	if s.Dir == "" {
		return s.Stream
	}
	return s.Dir + " (" + s.Stream + ")"
}

// DescribeStream names a stream for people: with its directory when one
// is known ("/home/u/proj (ws-…)"), else the stream alone.
func DescribeStream(stream, dir string) string {
	return Scope{Dir: NormalizeCwd(dir), Stream: stream}.String()
}

// A Resolver maps a working directory to its scope. The zero value knows
// no scope and looks at the real filesystem.
//
// The scope of a cwd is, walking from the cwd up through its ancestors:
//
//  1. the cwd itself when it already is a scope (its stream exists in the
//     root): an existing scope key never changes;
//  2. else the nearest ancestor that already is a scope;
//  3. else the nearest directory holding `.git` (a directory, or the file
//     a git worktree or submodule has): the repository's root;
//  4. else the cwd itself.
//
// So a host or CLI started in /home/u/proj/src reaches the memory of
// /home/u/proj, which is what a person means by "this project". The walk
// stops at the nearest `.git`: a scope above a repository's root never
// captures a directory inside the repository (a session once run in
// ~/work must not swallow every project cloned below it). The user's home
// directory and `/` are never the ancestor of another cwd's scope, nor
// its repository root (a dotfiles repository at ~ is common): they are
// the scope of themselves only, and the walk stops below them. Nor is
// anything above home the scope of home.
//
// A path that is not local to this machine (a Windows drive path on a
// POSIX host, or the reverse) is normalized as always but gets no
// filesystem checks and no ancestor: it is its own scope (step 1, or 4).
//
// The result depends on the root and the filesystem at the moment of
// intake, so intake decides it once and writes the stream into the log
// (the envelope keeps the real cwd): replay reads streams from the log and
// never resolves anything again.
type Resolver struct {
	// Known reports whether a stream already exists in the root. nil
	// means none does.
	Known func(stream string) bool
	// Home is the user's home directory; "" means os.UserHomeDir().
	Home string
	// HasGit reports whether dir (an OS path) holds a .git entry; nil
	// means an os.Lstat of dir/.git.
	HasGit func(dir string) bool
}

// Resolve returns the scope of cwd; the global scope for "".
func (r Resolver) Resolve(cwd string) Scope {
	norm := NormalizeCwd(cwd)
	if norm == "" {
		return Scope{Stream: GlobalStream}
	}
	self := Scope{Dir: norm, Stream: StreamForCwd(norm)}
	known := r.Known
	if known == nil {
		known = func(string) bool { return false }
	}
	if known(self.Stream) || !isLocalCwd(norm) {
		return self
	}
	home := r.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	home = NormalizeCwd(home)
	if norm == home || isTopDir(norm) {
		return self // never inside a scope above it, nor a repository above it
	}
	hasGit := r.HasGit
	if hasGit == nil {
		hasGit = func(dir string) bool {
			_, err := os.Lstat(filepath.Join(dir, ".git"))
			return err == nil
		}
	}
	for d := norm; ; {
		if d != norm {
			if isTopDir(d) || d == home {
				break // never the scope of a directory below it
			}
			if s := StreamForCwd(d); known(s) {
				return Scope{Dir: d, Stream: s}
			}
		}
		if hasGit(filepath.FromSlash(d)) {
			return Scope{Dir: d, Stream: StreamForCwd(d)}
		}
		parent := path.Dir(d)
		if parent == d || !isAbsCwd(parent) {
			break
		}
		d = parent
	}
	return self
}

// isTopDir reports whether a normalized cwd is a filesystem root: "/" or
// a drive root ("c:/").
func isTopDir(norm string) bool {
	return norm == "/" || len(norm) == 3 && hasDriveLetter(norm) && norm[2] == '/'
}

// isLocalCwd reports whether a normalized absolute cwd names a path of
// this machine's kind: a drive path on Windows, a POSIX path elsewhere.
func isLocalCwd(norm string) bool {
	if runtime.GOOS == "windows" {
		return hasDriveLetter(norm)
	}
	return strings.HasPrefix(norm, "/")
}

// ResolveStream returns the scope e is written to. The working directory
// is e.Cwd, or else sessionCwd (the cwd the engine remembers for e.Session;
// pass "" when it knows none). With a working directory the scope is
// resolve(cwd), the scope the directory belongs to (Resolver); a nil
// resolve takes every cwd as its own scope. An explicit e.Stream must
// then agree with it, or be the cwd's own key, which is honoured as
// given (a scope key chosen by the sender, e.g. an import keyed like
// dsh-workspace-memory). Without a working directory an explicit e.Stream
// is used as given (Validate has checked that it is a stream name), with
// no directory, and otherwise the scope is "global".
//
// lineNo only labels the error.
func ResolveStream(e *events.Envelope, sessionCwd string, lineNo int, resolve func(cwd string) Scope) (Scope, *LineError) {
	cwd := e.Cwd
	if cwd == "" {
		cwd = sessionCwd
	}
	if cwd == "" {
		if e.Stream != "" {
			return Scope{Stream: e.Stream}, nil
		}
		return Scope{Stream: GlobalStream}, nil
	}
	own := Scope{Dir: NormalizeCwd(cwd), Stream: StreamForCwd(cwd)}
	want := own
	if resolve != nil {
		want = resolve(cwd)
	}
	switch e.Stream {
	case "", want.Stream:
		return want, nil
	case own.Stream:
		return own, nil
	}
	src := "cwd"
	if e.Cwd == "" {
		src = "the session's cwd"
	}
	return Scope{}, &LineError{Line: lineNo, Field: "stream", Msg: fmt.Sprintf(
		"is %q but %s %s belongs to the scope %s; omit stream and dshmem derives it", e.Stream, src, QuoteClip(cwd), want)}
}

// streamOfAncestor reports whether stream is the key of norm (a
// normalized absolute cwd) or of one of its ancestors: the streams an
// explicit stream of an event with that cwd may name before the engine
// resolves it (Validate).
func streamOfAncestor(stream, norm string) bool {
	for d := norm; ; {
		if StreamForCwd(d) == stream {
			return true
		}
		parent := path.Dir(d)
		if parent == d || !isAbsCwd(parent) {
			return false
		}
		d = parent
	}
}

// IsWorkspaceStream reports whether s is a workspace stream ("ws-…").
func IsWorkspaceStream(s string) bool { return strings.HasPrefix(s, "ws-") && ValidStream(s) }
