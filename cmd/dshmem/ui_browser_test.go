package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/observer"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findChromium returns the browser the page test drives. Under CI=true a
// missing browser fails the test (.ci/run installs Debian's chromium);
// elsewhere the test is skipped with a message.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: the settings page test needs it under CI (apt-get install -y chromium; .ci/run does)")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium): skipping the settings page in a real browser")
	return ""
}

// artifactsDir is where the page test keeps its screenshots:
// $DSHMEM_ARTIFACTS/ui, or a fresh temporary directory that outlives the
// test.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DSHMEM_ARTIFACTS")
	if dir == "" {
		d, err := os.MkdirTemp("", "dshmem-artifacts-")
		require.NoError(t, err)
		dir = d
	}
	dir = filepath.Join(dir, "ui")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// pageRun is a dshmem binary, a root and a `dshmem serve` child.
type pageRun struct {
	t    *testing.T
	bin  string
	root string
}

// dshmem runs the binary on the root and returns its stdout; a non-zero
// exit fails the test.
func (p *pageRun) dshmem(args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.bin, append([]string{"--root", p.root}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(p.t, cmd.Run(), "dshmem %s: %s%s", strings.Join(args, " "), out.String(), errb.String())
	return out.String()
}

// entries is `dshmem entries --stream S --json`, by id.
func (p *pageRun) entries(stream string) map[string]observer.Entry {
	p.t.Helper()
	var es []observer.Entry
	out := p.dshmem("entries", "--stream", stream, "--json")
	require.NoError(p.t, json.Unmarshal([]byte(out), &es), "entries --json: %s", out)
	m := map[string]observer.Entry{}
	for _, e := range es {
		m[e.ID] = e
	}
	return m
}

// scopes is `dshmem scopes list [--archived] --json`, by key.
func (p *pageRun) scopes(archived bool) map[string]observer.ScopeInfo {
	p.t.Helper()
	args := []string{"scopes", "list", "--json"}
	if archived {
		args = append(args, "--archived")
	}
	out := p.dshmem(args...)
	var ss []observer.ScopeInfo
	require.NoError(p.t, json.Unmarshal([]byte(out), &ss), "scopes list --json: %s", out)
	m := map[string]observer.ScopeInfo{}
	for _, s := range ss {
		m[s.Key] = s
	}
	return m
}

// startServe starts `dshmem serve` and waits for its listening line.
func (p *pageRun) startServe() {
	p.t.Helper()
	cmd := exec.Command(p.bin, "--root", p.root, "serve", "--no-watch")
	stderr, err := cmd.StderrPipe()
	require.NoError(p.t, err)
	require.NoError(p.t, cmd.Start())
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() || !strings.Contains(sc.Text(), "listening on") {
		cmd.Process.Kill()
		cmd.Wait()
		p.t.Fatalf("serve: got %q, want the listening line", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	p.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(p.t, err, "serve exit")
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			p.t.Error("serve did not stop on SIGTERM")
		}
	})
}

// TestSettingsPageInBrowser drives the settings page in headless
// chromium against a real `dshmem serve`: log in with the one-time link
// (a second use fails), pick a scope, open an entry's history, remember
// and forget an entry, archive the scope, find it in the bin, restore
// it, purge it with the typed key; each step is checked in the page and
// with the CLI. A cross-site form post without the CSRF token is
// refused. Screenshots of the entries view (1280 and 390 px wide) are
// kept in $DSHMEM_ARTIFACTS/ui.
func TestSettingsPageInBrowser(t *testing.T) {
	chrome := findChromium(t)
	p := &pageRun{t: t, bin: buildDshmem(t), root: t.TempDir()}
	const dir, otherDir = "/home/u/webapp", "/home/u/other"
	ws, other := observer.StreamForCwd(dir), observer.StreamForCwd(otherDir)
	seed := strings.TrimSpace(p.dshmem("remember", "--cwd", dir, "--type", "decision", "We deploy the web app with blue green releases"))
	p.dshmem("remember", "--cwd", otherDir, "The other project indents with tabs")
	// A global entry that evidence made low confidence: shown twice in a
	// session of the other workspace, corrected by the user each time
	// (1.00 → 0.70 → 0.40, ops in the global stream).
	low := strings.TrimSpace(p.dshmem("remember", "--global", "I prefer short answers"))
	var conv strings.Builder
	for i, l := range []string{
		`"user/message","data":{"text":"explain the build"}`,
		`"memory/shown","data":{"entries":["` + low + `"]}`,
		`"assistant/message","data":{"text":"It runs make."}`,
		`"user/message","data":{"text":"no, that's wrong"}`,
		`"memory/shown","data":{"entries":["` + low + `"]}`,
		`"assistant/message","data":{"text":"It runs go build."}`,
		`"user/message","data":{"text":"no, that's wrong"}`,
		`"session/end","data":{}`,
	} {
		fmt.Fprintf(&conv, `{"id":"lc:%d","time":"2026-08-18T09:0%d:00Z","session":"lc","cwd":%q,"type":%s}`+"\n", i, i, otherDir, l)
	}
	convFile := filepath.Join(t.TempDir(), "lc.jsonl")
	require.NoError(t, os.WriteFile(convFile, []byte(conv.String()), 0o644))
	p.dshmem("ingest", convFile)
	p.dshmem("checkpoint", "--force")
	p.startServe()
	link := strings.TrimSpace(p.dshmem("ui"))
	require.Contains(t, link, "/ui/login?t=")
	origin := link[:strings.Index(link, "/ui/")]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(ctx, steps...), "%s", what)
	}
	// until waits for a JavaScript condition in the page.
	until := func(what, expr string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second)))
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v (waited for %s)\npage text:\n%s", what, err, expr, text)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
		require.NoError(t, err, "text of %s", sel)
		return s
	}
	entrySel := func(id string) string { return fmt.Sprintf(`.entry[data-id=%q]`, id) }

	// Log in; the link works once.
	do("log in", chromedp.Navigate(link))
	until("the scope list after login", `document.body.dataset.ready === "true" && !!document.querySelector('#scope-list button[data-key="`+ws+`"]')`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.Equal(t, origin+"/ui/", loc, "the link's token stays in the address bar")
	cookieVisible, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`))
	require.NoError(t, err)
	assert.Empty(t, cookieVisible, "the session cookie is visible to script")
	func() {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(link)))
		msg, err := chromedp.Run(tab, chromedp.TextContent(chromedp.ID("message")))
		require.NoError(t, err)
		assert.Contains(t, msg, "already used", "second use of the link: %q", msg)
	}()

	// Every form control has a label, and the page has its landmarks.
	unlabelled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input, textarea, select')]
		.filter(e => e.labels.length === 0 && !e.getAttribute('aria-label')).map(e => e.id || e.outerHTML)`))
	require.NoError(t, err)
	assert.Empty(t, unlabelled, "form controls without a label")
	landmarks, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('header[role=banner]') && !!document.querySelector('nav[aria-labelledby]') && !!document.querySelector('main') && !!document.querySelector('[aria-live]')`))
	require.NoError(t, err)
	assert.True(t, landmarks, "banner, navigation, main and a live region")

	// Pick the scope with the keyboard alone: filter, Tab to it, Enter.
	do("filter and pick the scope", chromedp.SendKeys(chromedp.ID("scope-filter"), "webapp"))
	until("the filtered list", `document.querySelectorAll('#scope-list button').length === 1`)
	do("tab to the scope", chromedp.KeyEvent("\t"))
	focusedKey, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.key || document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, ws, focusedKey, "Tab from the filter does not reach the scope")
	do("Enter on the scope", chromedp.KeyEvent("\r"))
	until("the scope's entries", `!!document.querySelector('`+entrySel(seed)+`')`)
	assert.Contains(t, text("#scope-title"), ws)
	assert.Contains(t, text("#scope-dir"), dir)
	assert.Contains(t, text(`#scope-facts dd[data-fact="entries"]`), "1 active")
	assert.Equal(t, "1 active entry", text("#entries-count"), "one entry is counted in the singular")
	assert.Contains(t, text(entrySel(seed)), "blue green")
	assert.Contains(t, text("#summary"), "blue green", "the rendered summary")
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	assert.Equal(t, "scope-title", focused, "focus after picking a scope")
	do("clear the filter", chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById('scope-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()`))

	// Screenshots of the entries view, wide and narrow.
	art := artifactsDir(t)
	for _, vp := range []struct {
		name string
		w, h int64
	}{{"entries-wide-1280.png", 1280, 900}, {"entries-narrow-390.png", 390, 844}} {
		do("viewport "+vp.name, chromedp.EmulateViewport(vp.w, vp.h))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "%s is not a PNG", vp.name)
		require.NoError(t, os.WriteFile(filepath.Join(art, vp.name), png, 0o644))
		if vp.w == 390 {
			overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
			require.NoError(t, err)
			assert.False(t, overflow, "the page scrolls sideways at 390 px")
		}
	}
	do("back to wide", chromedp.EmulateViewport(1280, 900))
	// Dark mode: the page follows prefers-color-scheme.
	bg := func() string {
		t.Helper()
		c, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		require.NoError(t, err)
		return c
	}
	light := bg()
	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	require.NoError(t, err)
	dark := bg()
	assert.NotEqual(t, light, dark, "the background is %s in light and dark mode alike", light)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(art, "entries-dark-1280.png"), png, 0o644))
	_, err = chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}})
	require.NoError(t, err)
	t.Logf("screenshots of the entries view in %s", art)

	// Confidence is shown; a low-confidence badge only below 0.5.
	assert.Contains(t, text(entrySel(seed)+" .meta"), "confidence 1.00")
	assert.NotContains(t, text(entrySel(seed)+" .meta"), "low confidence")

	// An entry's history.
	do("open history", chromedp.Click(chromedp.CSS(entrySel(seed)+" button.history")))
	until("the history", `!document.getElementById('history').hidden && document.querySelectorAll('#versions .version').length === 1`)
	assert.Contains(t, text("#history-title"), "1 versions")
	assert.Contains(t, text("#versions"), "add")
	assert.Contains(t, text("#versions"), "memory/remember")
	assert.Contains(t, text("#history-prov"), "remember")

	// Remember, with the keyboard: type, then Enter in the title field submits.
	do("remember", chromedp.SendKeys(chromedp.ID("remember-content"), "Release notes live in docs/CHANGES.md"),
		chromedp.SendKeys(chromedp.ID("remember-title-in"), "Release notes\r"))
	until("the remembered entry", `[...document.querySelectorAll('.entry h4')].some(h => h.textContent === 'Release notes')`)
	var added observer.Entry
	for _, e := range p.entries(ws) {
		if e.Title == "Release notes" {
			added = e
		}
	}
	require.NotEmpty(t, added.ID, "the CLI does not list the entry the page remembered: %+v", p.entries(ws))
	assert.Equal(t, "active", added.Status)
	assert.Contains(t, text("#status"), "Remembered")

	// Edit the first entry: a revise op, seen by the CLI as version 2.
	do("edit", chromedp.Click(chromedp.CSS(entrySel(seed)+" button.edit")))
	until("the edit form", `!!document.querySelector('`+entrySel(seed)+` .edit-form textarea')`)
	do("change the text", chromedp.Evaluate[chromedp.Void](`document.querySelector('`+entrySel(seed)+` .edit-form textarea').value = ''`),
		chromedp.SendKeys(chromedp.CSS(entrySel(seed)+" .edit-form textarea"), "We deploy the web app with blue green releases, one region at a time"),
		chromedp.Click(chromedp.CSS(entrySel(seed)+" .edit-form button[type=submit]")))
	until("the revised entry", `document.querySelector('`+entrySel(seed)+` .content').textContent.includes('one region at a time')`)
	rev := p.entries(ws)[seed]
	assert.EqualValues(t, 2, rev.Version, "the CLI after the page's edit: %+v", rev)
	assert.Contains(t, rev.Content, "one region at a time", "the CLI after the page's edit: %+v", rev)

	// Search: the results are announced (aria-live) and hold the entry.
	do("search", chromedp.SendKeys(chromedp.ID("search-q"), "region deploy\r"))
	until("search results", `[...document.querySelectorAll('#search-results .result')].some(r => r.dataset.id === '`+seed+`')`)
	live, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('search-results').getAttribute('aria-live')`))
	require.NoError(t, err)
	assert.Equal(t, "polite", live)

	// Forget it.
	do("forget", chromedp.Click(chromedp.CSS(entrySel(added.ID)+" button.forget")),
		chromedp.SendKeys(chromedp.CSS(entrySel(added.ID)+" .forget-form input"), "moved to the wiki"),
		chromedp.Click(chromedp.CSS(entrySel(added.ID)+" button.confirm-forget")))
	until("the entry gone from the active list", `!document.querySelector('`+entrySel(added.ID)+`') && document.getElementById('status').textContent.includes('Forgot')`)
	assert.Equal(t, "forgotten", p.entries(ws)[added.ID].Status, "the CLI after the page's forget")
	do("show forgotten", chromedp.Click(chromedp.CSS(`input[name=status][value=forgotten]`)))
	until("the forgotten entry", `!!document.querySelector('`+entrySel(added.ID)+`[data-status="forgotten"]')`)
	do("show active", chromedp.Click(chromedp.CSS(`input[name=status][value=active]`)))
	until("the active list", `!!document.querySelector('`+entrySel(seed)+`')`)

	// A cross-site form post (another origin on the same host, so the
	// SameSite=Strict cookie is sent) without the CSRF token is refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form id="f" method="POST" action="%s/ui/api/scopes/%s/remember">`+
			`<input name="content" value="planted by another site"></form><script>document.getElementById("f").submit()</script>`, origin, ws)
	}))
	defer evil.Close()
	func() {
		tab, cancel := chromedp.NewContext(ctx)
		defer cancel()
		require.NoError(t, chromedp.Do(tab, chromedp.Navigate(evil.URL)))
		_, err := chromedp.Run(tab, chromedp.Poll[bool](`location.href.includes('/ui/api/')`, chromedp.WithPollingTimeout(15*time.Second)))
		require.NoError(t, err, "the cross-site form was not posted")
		body, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		require.NoError(t, err)
		assert.Contains(t, body, "cross-site request refused", "the cross-site post: %s", body)
	}()
	for _, e := range p.entries(ws) {
		assert.NotContains(t, e.Content, "planted", "a cross-site post was written: %+v", e)
	}

	// Archive: gone from the active list, in the bin.
	do("archive", chromedp.Click(chromedp.ID("archive")))
	until("the scope gone from the active list", `document.getElementById('status').textContent.includes('recycle bin') && !document.querySelector('#scope-list button[data-key="`+ws+`"]')`)
	assert.NotContains(t, p.scopes(false), ws, "scopes list after the page's archive")
	assert.Contains(t, p.scopes(true), ws, "scopes list --archived after the page's archive")
	do("open the bin", chromedp.Click(chromedp.ID("view-bin")))
	until("the scope in the bin", `!!document.querySelector('#scope-list button[data-key="`+ws+`"]')`)
	do("pick it in the bin", chromedp.Click(chromedp.CSS(`#scope-list button[data-key="`+ws+`"]`)))
	until("the archived scope", `document.getElementById('scope-title').textContent.includes('recycle bin') && !document.getElementById('restore').hidden`)

	// Restore: back in the active list.
	do("restore", chromedp.Click(chromedp.ID("restore")))
	until("the scope gone from the bin", `document.getElementById('status').textContent.includes('Restored') && !document.querySelector('#scope-list button[data-key="`+ws+`"]')`)
	assert.Contains(t, p.scopes(false), ws, "scopes list after the page's restore")
	do("back to active", chromedp.Click(chromedp.ID("view-active")))
	until("the scope active again", `!!document.querySelector('#scope-list button[data-key="`+ws+`"]')`)

	// Purge: the button waits for the typed key.
	do("pick for purge", chromedp.Click(chromedp.CSS(`#scope-list button[data-key="`+ws+`"]`)))
	until("the scope", `!!document.querySelector('`+entrySel(seed)+`')`)
	do("type a wrong key", chromedp.SendKeys(chromedp.ID("purge-confirm"), other))
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('purge').disabled`))
	require.NoError(t, err)
	assert.True(t, disabled, "purge is enabled with another scope's key typed")
	do("type the key", chromedp.Evaluate[chromedp.Void](`document.getElementById('purge-confirm').value = ''`),
		chromedp.SendKeys(chromedp.ID("purge-confirm"), ws))
	until("purge enabled", `!document.getElementById('purge').disabled`)
	do("purge", chromedp.Click(chromedp.ID("purge")))
	until("the scope purged", `document.getElementById('status').textContent.includes('Purged') && !document.querySelector('#scope-list button[data-key="`+ws+`"]')`)
	assert.NotContains(t, p.scopes(false), ws, "scopes list after the page's purge")
	assert.NotContains(t, p.scopes(true), ws, "scopes list --archived after the page's purge")
	assert.Contains(t, p.scopes(false), other, "the purge took another scope")
	assert.Empty(t, p.entries(ws), "entries of the purged scope")

	// The low-confidence global entry carries the badge; no other does.
	do("pick global", chromedp.Click(chromedp.CSS(`#scope-list button[data-key="global"]`)))
	until("the global entry", `!!document.querySelector('`+entrySel(low)+`')`)
	assert.Contains(t, text(entrySel(low)+" .badge.low-confidence"), "low confidence 0.40")
	assert.Contains(t, text(entrySel(low)+" .meta"), "confidence 0.40")
	badges, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.badge.low-confidence').length`))
	require.NoError(t, err)
	assert.Equal(t, 1, badges, "low-confidence badges on the global scope's page")
}
