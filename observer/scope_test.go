package observer

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeCwd(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"Empty", "", ""},
		{"POSIX", "/home/u/proj", "/home/u/proj"},
		{"TrailingSlash", "/home/u/proj/", "/home/u/proj"},
		{"DotsAndDoubleSlashes", "/home//u/./x/../proj", "/home/u/proj"},
		{"Root", "/", "/"},
		{"POSIXKeepsCase", "/Home/U/Proj", "/Home/U/Proj"},
		{"Windows", `C:\Users\X\proj`, "c:/users/x/proj"},
		{"WindowsTrailingBackslash", `C:\Users\X\proj\`, "c:/users/x/proj"},
		{"WindowsForwardSlashes", "C:/Users/X/proj", "c:/users/x/proj"},
		{"WindowsDriveRoot", `D:\`, "d:/"},
		{"WindowsDotDotStopsAtRoot", `C:\..\..\Windows`, "c:/windows"},
		{"WindowsMixedSlashes", `c:/Users\X/proj/`, "c:/users/x/proj"},
		{"RelativeStaysRelative", "proj/src/", "proj/src"},
		{"BareDrive", "C:", "c:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NormalizeCwd(tt.in)
			require.Equal(t, tt.want, got, "NormalizeCwd(%q) = %q, want %q", tt.in, got, tt.want)
			again := NormalizeCwd(got)
			require.Equal(t, got, again, "NormalizeCwd is not idempotent: %q -> %q -> %q", tt.in, got, again)
		})
	}
}

// wsStream computes a stream name the long way, independently of
// StreamForCwd, from an already normalized cwd.
func wsStream(t *testing.T, normalized string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(normalized))
	return "ws-" + hex.EncodeToString(sum[:])[:20]
}

func TestStreamForCwd(t *testing.T) {
	tests := []struct {
		name, cwd, want string
	}{
		{"EmptyIsGlobal", "", "global"},
		{"POSIX", "/home/u/proj", wsStream(t, "/home/u/proj")},
		{"TrailingSlashSameStream", "/home/u/proj/", wsStream(t, "/home/u/proj")},
		{"WindowsLowerCased", `C:\Users\X\proj`, wsStream(t, "c:/users/x/proj")},
		{"WindowsOtherSpellingSameStream", `c:/users/x/proj/`, wsStream(t, "c:/users/x/proj")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StreamForCwd(tt.cwd)
			require.Equal(t, tt.want, got, "StreamForCwd(%q) = %q, want %q", tt.cwd, got, tt.want)
			require.True(t, ValidStream(got), "ValidStream(%q) = false, want true", got)
		})
	}
	// Hard-coded values pin the format (computed with
	// `printf '/home/u/proj' | sha256sum | cut -c1-20`): a change of hash,
	// length or normalization would move every existing scope.
	pinned := map[string]string{
		"/home/u/proj":    "ws-9c09f8055a26c27736dd",
		`C:\Users\X\proj`: "ws-6fbb0ddd626f14969a6a",
	}
	for cwd, want := range pinned {
		got := StreamForCwd(cwd)
		assert.Equal(t, want, got, "StreamForCwd(%q) = %q, want %q", cwd, got, want)
	}
	require.NotEqual(t, StreamForCwd("/home/u/proj2"), StreamForCwd("/home/u/proj"), "different directories share a stream")
}

func TestValidStream(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"global", true},
		{"ws-0123456789abcdef0123", true},
		{"ws-0123456789ABCDEF0123", false},
		{"ws-0123456789abcdef012", false},
		{"ws-0123456789abcdef01234", false},
		{"ws-0123456789abcdef012g", false},
		{"Global", false},
		{"", false},
		{"ws-", false},
	}
	for _, tt := range tests {
		got := ValidStream(tt.s)
		assert.Equal(t, tt.want, got, "ValidStream(%q) = %v, want %v", tt.s, got, tt.want)
	}
}

func TestResolveStream(t *testing.T) {
	proj := StreamForCwd("/home/u/proj")
	sub := StreamForCwd("/home/u/proj/sub")
	other := StreamForCwd("/home/u/other")
	// resolve puts /home/u/proj/sub in the scope of /home/u/proj, as a
	// Resolver does when /home/u/proj is a repository root.
	resolve := func(cwd string) Scope {
		if n := NormalizeCwd(cwd); n == "/home/u/proj/sub" {
			return Scope{Dir: "/home/u/proj", Stream: proj}
		}
		return Scope{Dir: NormalizeCwd(cwd), Stream: StreamForCwd(cwd)}
	}
	tests := []struct {
		name       string
		cwd        string
		stream     string
		sessionCwd string
		want       Scope
		wantErr    string
	}{
		{name: "CwdWins", cwd: "/home/u/proj", sessionCwd: "/home/u/other", want: Scope{"/home/u/proj", proj}},
		{name: "SessionCwd", sessionCwd: "/home/u/proj", want: Scope{"/home/u/proj", proj}},
		{name: "NoCwdIsGlobal", want: Scope{"", "global"}},
		{name: "ExplicitStreamWithoutCwd", stream: other, want: Scope{"", other}},
		{name: "ExplicitStreamMatchingCwd", cwd: "/home/u/proj/", stream: proj, want: Scope{"/home/u/proj", proj}},
		{name: "SubdirectoryResolvesToProject", cwd: "/home/u/proj/sub", want: Scope{"/home/u/proj", proj}},
		{name: "ExplicitStreamOfResolvedScope", cwd: "/home/u/proj/sub", stream: proj, want: Scope{"/home/u/proj", proj}},
		{name: "ExplicitOwnKeyHonoured", cwd: "/home/u/proj/sub", stream: sub, want: Scope{"/home/u/proj/sub", sub}},
		{name: "ErrStreamDisagreesWithCwd", cwd: "/home/u/proj", stream: other, wantErr: "belongs to the scope /home/u/proj (" + proj + ")"},
		{name: "ErrStreamDisagreesWithSessionCwd", sessionCwd: "/home/u/proj", stream: "global", wantErr: "the session's cwd"},
		{name: "ErrNamesResolvedDirectory", cwd: "/home/u/proj/sub", stream: other, wantErr: "/home/u/proj (" + proj + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := events.Envelope{Cwd: tt.cwd, Stream: tt.stream}
			got, lerr := ResolveStream(&e, tt.sessionCwd, 7, resolve)
			if tt.wantErr != "" {
				if lerr == nil || lerr.Field != "stream" || lerr.Line != 7 || !strings.Contains(lerr.Msg, tt.wantErr) {
					t.Fatalf("got %+v, %v; want a LineError on line 7, field stream, saying %q", got, lerr, tt.wantErr)
				}
				return
			}
			require.Nil(t, lerr, "got %+v, %v; want %+v", got, lerr, tt.want)
			require.Equal(t, tt.want, got, "got %+v, %v; want %+v", got, lerr, tt.want)
		})
	}
}
