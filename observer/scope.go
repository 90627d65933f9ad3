package observer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"dshmem/events"
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
	if s == GlobalStream {
		return true
	}
	id, ok := strings.CutPrefix(s, "ws-")
	if !ok || len(id) != streamIDHexLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ResolveStream returns the stream e is written to. The working directory
// is e.Cwd, or else sessionCwd (the cwd the engine remembers for e.Session;
// pass "" when it knows none). With a working directory the stream is
// StreamForCwd of it, and an explicit e.Stream must agree with it. Without
// one, an explicit e.Stream is used as given (Validate has checked that it
// is a stream name), and otherwise the stream is "global".
//
// lineNo only labels the error.
func ResolveStream(e *events.Envelope, sessionCwd string, lineNo int) (string, *LineError) {
	cwd := e.Cwd
	if cwd == "" {
		cwd = sessionCwd
	}
	if cwd == "" {
		if e.Stream != "" {
			return e.Stream, nil
		}
		return GlobalStream, nil
	}
	want := StreamForCwd(cwd)
	if e.Stream != "" && e.Stream != want {
		src := "cwd"
		if e.Cwd == "" {
			src = "the session's cwd"
		}
		return "", &LineError{Line: lineNo, Field: "stream", Msg: fmt.Sprintf(
			"is %q but %s %s resolves to %q; omit stream and dshmem derives it", e.Stream, src, quoteClip(cwd), want)}
	}
	return want, nil
}
