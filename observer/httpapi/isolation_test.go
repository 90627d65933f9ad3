package httpapi

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marker matches the unique token every entry of the isolation test
// holds: zqx<workspace>n<count>, or zqxgn<count> for the global ones.
var marker = regexp.MustCompile(`zqx([a-z0-9]+)n[0-9]+`)

// TestIsolation is a property test over random interleavings of
// sessions and workspaces (seeded): remembers into three workspaces and
// the global scope, turns in two sessions per workspace, and after each
// step a recall, a session-start context and a packet in a random
// session. Each answer may hold only its own workspace's entries and the
// global ones, and a session's packet is its own.
func TestIsolation(t *testing.T) {
	now := time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC)
	ts := startServer(t, t.TempDir(), ServerOptions{Now: func() time.Time { return now }})
	workspaces := []string{"a", "b", "c"}
	cwd := func(ws string) string { return "/home/u/iso-" + ws }
	rng := rand.New(rand.NewPCG(7, 7))
	count, seen, packets := 0, map[string]int{}, 0
	sessionsOf := map[string]string{} // session → workspace
	check := func(ws, what, text string) {
		t.Helper()
		for _, m := range marker.FindAllStringSubmatch(text, -1) {
			seen[m[1]]++
			assert.True(t, m[1] == ws || m[1] == "g", "%s of workspace %s shows %s (of %s)", what, ws, m[0], m[1])
		}
	}
	for step := range 150 {
		ws := workspaces[rng.IntN(len(workspaces))]
		sid := fmt.Sprintf("s-%s-%d", ws, rng.IntN(2))
		switch op := rng.IntN(5); op {
		case 0, 1: // remember, in a workspace or (sometimes) globally
			count++
			body := map[string]any{"content": fmt.Sprintf("The deploy pipeline needs zqx%sn%d before the release build", ws, count), "cwd": cwd(ws)}
			if rng.IntN(6) == 0 {
				body = map[string]any{"content": fmt.Sprintf("The deploy pipeline always runs zqxgn%d first", count), "global": true}
			}
			ts.must(200, "POST", "/v1/remember", body, nil)
		case 2: // a turn of a session
			if _, ok := sessionsOf[sid]; !ok {
				sessionsOf[sid] = ws
				ts.must(200, "POST", "/v1/events", []any{event(sid+":start", "session/start", sid, cwd(ws), map[string]any{"origin": "top"})}, nil)
			}
			ts.must(200, "POST", "/v1/events", []any{event(fmt.Sprintf("%s:%d", sid, step), "user/message", sid, cwd(ws),
				map[string]any{"text": "the deploy pipeline fails again before the release build"})}, nil)
		case 3: // recall from the workspace
			code, out := ts.call("POST", "/v1/recall", map[string]any{"query": "deploy pipeline release build", "cwd": cwd(ws), "limit": 20})
			require.Equal(t, 200, code, "%s", out)
			check(ws, "recall", string(out))
		case 4: // the session-start context and a packet
			code, out := ts.call("GET", "/v1/context?cwd="+cwd(ws)+"&session="+sid, nil)
			require.Equal(t, 200, code, "%s", out)
			check(ws, "context", string(out))
			if owner, ok := sessionsOf[sid]; ok {
				if p, _ := ts.fetch(sid, ""); p != nil {
					packets++
					assert.Equal(t, sid, p.Session, "the packet fetched for %s is %s's", sid, p.Session)
					var b strings.Builder
					for _, e := range p.Entries {
						fmt.Fprintf(&b, "%s %s %s\n", e.ID, e.Title, e.Text)
					}
					b.WriteString(p.Text)
					check(owner, "packet of "+sid, b.String())
				}
			}
		}
	}
	// Not vacuous: answers showed entries of every workspace, and of the
	// global scope.
	for _, ws := range append(workspaces, "g") {
		assert.Greater(t, seen[ws], 0, "no answer showed an entry of %s: %v", ws, seen)
	}
	assert.Greater(t, packets, 0, "no packet was served")
	t.Logf("%d entries, %d packets; markers shown per scope: %v", count, packets, seen)
}
