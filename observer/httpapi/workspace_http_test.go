package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/internal/enginetest"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The HTTP API resolves every cwd like intake does: a session, a memory
// and the queries of a subdirectory all reach the repository's scope; and
// injected text is left out of search and recall unless includeInjected.
func TestHTTPSubdirectoryAndInjected(t *testing.T) {
	base := filepath.ToSlash(t.TempDir())
	enginetest.Mkdirs(t, base, "proj/.git", "proj/web/src")
	proj, sub := base+"/proj", base+"/proj/web/src"
	stream := observer.StreamForCwd(proj)
	ts := startServer(t, t.TempDir(), ServerOptions{})

	lines := enginetest.Conv("h1", sub, "the checkout page renders twice")
	lines = append(lines, []byte(`{"id":"h1:3","type":"user/message","time":"2026-08-18T10:00:03Z","session":"h1","data":{"text":"Current runtime context. Remember that the checkout uses stripe elements.","injected":true}}`))
	code, body := ts.call("POST", "/v1/events", strings.Join(strs(lines), "\n"))
	var er EventsResponse
	require.Equal(t, http.StatusOK, code, "events: %d %s", code, body)
	require.Nil(t, json.Unmarshal(body, &er), "events: %d %s", code, body)
	require.EqualValues(t, 4, er.Appended, "events: %d %s", code, body)
	for _, r := range er.Results {
		require.Equal(t, stream, r.Stream, "event %s went to %s, want the repository's %s", r.ID, r.Stream, stream)
	}

	t.Run("RememberRecallContext", func(t *testing.T) {
		code, body := ts.call("POST", "/v1/remember", map[string]any{"content": "The checkout page uses server-side rendering", "cwd": sub + "/components", "type": "decision"})
		var en observer.Entry
		require.Equal(t, http.StatusOK, code, "remember: %d %s, want an entry of %s", code, body, stream)
		require.Nil(t, json.Unmarshal(body, &en), "remember: %d %s, want an entry of %s", code, body, stream)
		require.Equal(t, stream, en.Scope, "remember: %d %s, want an entry of %s", code, body, stream)
		code, body = ts.call("POST", "/v1/recall", map[string]any{"query": "checkout rendering", "cwd": base + "/proj/web"})
		require.Equal(t, http.StatusOK, code, "recall from a subdirectory: %d %s, want %s", code, body, en.ID)
		require.Contains(t, string(body), en.ID, "recall from a subdirectory: %d %s, want %s", code, body, en.ID)
		code, body = ts.call("POST", "/v1/sessions/h9/prompt", map[string]any{"text": "why does the checkout page use server-side rendering", "cwd": sub, "step": 1})
		var p broker.Packet
		require.Equal(t, http.StatusOK, code, "prompt packet from a subdirectory: %d %s, want %s", code, body, en.ID)
		require.Nil(t, json.Unmarshal(body, &p), "prompt packet from a subdirectory: %d %s, want %s", code, body, en.ID)
		require.NotEqualValues(t, 0, len(p.Entries), "prompt packet from a subdirectory: %d %s, want %s", code, body, en.ID)
		require.Equal(t, en.ID, p.Entries[0].ID, "prompt packet from a subdirectory: %d %s, want %s", code, body, en.ID)
		code, body = ts.call("GET", "/v1/context?cwd="+url.QueryEscape(sub), nil)
		var sc broker.SessionContext
		require.Equal(t, http.StatusOK, code, "context of a subdirectory: %d %s", code, body)
		require.Nil(t, json.Unmarshal(body, &sc), "context of a subdirectory: %d %s", code, body)
		require.Equal(t, stream, sc.Scope, "context of a subdirectory: %d %s", code, body)
		require.Contains(t, sc.Workspace, "server-side rendering", "context of a subdirectory: %d %s", code, body)
	})
	t.Run("Checkpoint", func(t *testing.T) {
		code, body := ts.call("POST", "/v1/checkpoint", map[string]any{"cwd": sub, "force": true})
		var cr CheckpointResponse
		require.Equal(t, http.StatusOK, code, "checkpoint of a subdirectory: %d %s", code, body)
		require.Nil(t, json.Unmarshal(body, &cr), "checkpoint of a subdirectory: %d %s", code, body)
		require.Len(t, cr.Results, 1, "checkpoint of a subdirectory: %d %s", code, body)
		require.Equal(t, stream, cr.Results[0].Stream, "checkpoint of a subdirectory: %d %s", code, body)
	})
	t.Run("SearchIncludeInjected", func(t *testing.T) {
		for _, route := range []string{"/v1/search", "/v1/recall"} {
			for _, include := range []bool{false, true} {
				code, body := ts.call("POST", route, map[string]any{"query": "stripe elements", "cwd": sub, "kind": recall.KindEpisodic, "includeInjected": include})
				var res recall.Result
				require.Equal(t, http.StatusOK, code, "%s: %d %s", route, code, body)
				require.Nil(t, json.Unmarshal(body, &res), "%s: %d %s", route, code, body)
				switch {
				case !include && len(res.Items) != 0:
					t.Errorf("%s without includeInjected found %+v", route, res.Items)
				case !include && !strings.Contains(res.Guidance, "--include-injected") || !include && !strings.Contains(res.Guidance, proj+" ("+stream+")"):
					t.Errorf("%s: guidance %q does not name the scope's directory and --include-injected", route, res.Guidance)
				case include && (len(res.Items) != 1 || res.Items[0].EventID != "h1:3" || !strings.Contains(strings.Join(res.Items[0].Flags, ","), "injected")):
					t.Errorf("%s with includeInjected: got %+v, want h1:3 flagged injected", route, res.Items)
				}
			}
		}
	})
	t.Run("EmptyAnswerNamesNewDirectory", func(t *testing.T) {
		fresh := base + "/fresh"
		code, body := ts.call("POST", "/v1/recall", map[string]any{"query": "checkout", "cwd": fresh})
		var res recall.Result
		require.Equal(t, http.StatusOK, code, "recall: %d %s", code, body)
		require.Nil(t, json.Unmarshal(body, &res), "recall: %d %s", code, body)
		want := fresh + " (" + observer.StreamForCwd(fresh) + ")"
		assert.False(t, len(res.Items) != 0 || !strings.Contains(res.Guidance, want), "recall of a directory without memory: %+v, want guidance naming %s", res, want)
	})
	t.Run("ErrStreamNamesDirectory", func(t *testing.T) {
		for _, c := range []struct{ name, stream, want string }{
			// The key of a parent that is not the scope: intake names the scope.
			{"NotTheScope", observer.StreamForCwd(base + "/proj/web"), proj + " (" + stream + ")"},
			// Not the key of the cwd or any parent: Validate names the cwd.
			{"NotAParent", observer.StreamForCwd(base + "/elsewhere"), sub},
		} {
			line := fmt.Sprintf(`{"id":"h2:0","type":"session/start","time":"2026-08-18T10:00:00Z","session":"h2","cwd":%q,"stream":%q,"data":{"origin":"top"}}`, sub, c.stream)
			_, body := ts.call("POST", "/v1/events", line)
			var er EventsResponse
			err := json.Unmarshal(body, &er)
			require.NoError(t, err, "%s: got %s, want the event rejected", c.name, body)
			require.Len(t, er.Results, 1, "%s: got %s, want the event rejected", c.name, body)
			require.Equal(t, observer.StatusRejected, er.Results[0].Status, "%s: got %s, want the event rejected", c.name, body)
			assert.Contains(t, er.Results[0].Error, c.want, "%s: error %q does not name %s", c.name, er.Results[0].Error, c.want)
		}
	})
}

func strs(lines [][]byte) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}
