package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"dshmem/observer"
	"dshmem/observer/scrub"
)

func TestScrubRoute(t *testing.T) {
	root := t.TempDir()
	ts := startServer(t, root, ServerOptions{})
	defer ts.stop()
	var en observer.Entry
	ts.must(200, "POST", "/v1/remember", `{"content":"The vault code is VAULT-51xq","global":true}`, &en)
	ts.must(200, "POST", "/v1/forget", `{"id":"`+en.ID+`"}`, nil)

	code, out := ts.call("GET", "/v1/scrub", nil)
	require.Equal(t, 405, code, "%s", out)
	code, out = ts.call("POST", "/v1/scrub", `{"source":true}`)
	require.Equal(t, 400, code, "an unknown field: %s", out)

	var dry scrub.Report
	ts.must(200, "POST", "/v1/scrub", `{"dryRun":true}`, &dry)
	require.True(t, dry.DryRun)
	require.Equal(t, 1, dry.Events)

	// A hand edit not synced is refused with 409, and nothing changes.
	// (The files are written in the background after a fold: bring them
	// up to the index before editing one.)
	require.NoError(t, ts.eng.WriteFiles(t.Context()))
	gm := filepath.Join(root, "global.md")
	orig, err := os.ReadFile(gm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gm, append(orig, "\nmine\n"...), 0o644))
	code, out = ts.call("POST", "/v1/scrub", `{}`)
	require.Equal(t, 409, code, "%s", out)
	require.Contains(t, string(out), "dshmem sync")
	require.NoError(t, os.WriteFile(gm, orig, 0o644))

	var rep scrub.Report
	ts.must(200, "POST", "/v1/scrub", `{"sources":true}`, &rep)
	require.Equal(t, 1, rep.Events)
	require.True(t, rep.Sources)
	h, err := ts.eng.History(t.Context(), en.ID)
	require.NoError(t, err)
	for _, v := range h {
		require.False(t, strings.Contains(v.Content, "VAULT-51xq"), "version %d: %s", v.Version, v.Content)
	}
}
