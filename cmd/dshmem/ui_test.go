package main

import (
	"net/http"
	"strings"
	"testing"

	"dshmem/observer/httpapi"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUICommand: 'dshmem ui' gets a one-time link from the running
// server, and says what to do when none runs.
func TestUICommand(t *testing.T) {
	t.Run("ErrNoServer", func(t *testing.T) {
		root := t.TempDir()
		code, out, errs := cli(t, "", "--root", root, "ui")
		require.EqualValues(t, 1, code, "exit %d, out %s, stderr %s", code, out, errs)
		assert.Contains(t, errs, "no 'dshmem serve' runs on "+root, "stderr %s", errs)
		assert.Contains(t, errs, "serve'", "stderr %s: want how to start one", errs)
		assert.Empty(t, out)
	})
	t.Run("ErrStaleServeFile", func(t *testing.T) {
		root := t.TempDir()
		require.NoError(t, httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: "127.0.0.1:1", PID: 1 << 22, Token: "x"}))
		code, _, errs := cli(t, "", "--root", root, "ui")
		require.EqualValues(t, 1, code, "exit %d, stderr %s", code, errs)
		assert.Contains(t, errs, "which has exited", "stderr %s", errs)
	})
	t.Run("OK", func(t *testing.T) {
		root := t.TempDir()
		startInProcess(t, root)
		code, out, errs := cli(t, "", "--root", root, "ui")
		require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
		link := strings.TrimSpace(out)
		require.Contains(t, link, "/ui/login?t=", "out %s", out)
		assert.Contains(t, errs, "works once", "stderr %s", errs)
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for i, want := range []int{http.StatusSeeOther, http.StatusForbidden} {
			resp, err := noFollow.Get(link)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, want, resp.StatusCode, "use %d of the link", i+1)
		}
		// The link route is behind the API's bearer token.
		info, err := httpapi.ReadServeFile(root)
		require.NoError(t, err)
		resp, err := http.Post("http://"+info.Addr+"/v1/ui/link", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "POST /v1/ui/link without the token")
		code, out, errs = cli(t, "", "--root", root, "ui", "--json")
		require.EqualValues(t, 0, code, "exit %d, out %s, stderr %s", code, out, errs)
		assert.Contains(t, out, `"expires"`, "out %s", out)
	})
}
