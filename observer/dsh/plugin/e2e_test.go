package plugin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/observer/dsh/plugin/hosttest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run the real DSH host with the plugin that `dshmem dsh
// install` puts into its home, against the fake model, and check what
// reached the model in the fake model's request log.

var dshmemBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dshmem-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dshmemBin = filepath.Join(dir, "dshmem")
	out, err := exec.Command("go", "build", "-o", dshmemBin, "dshmem/cmd/dshmem").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build dshmem: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// world is one user's machine: a DSH home with dshmem installed, a memory
// root inside it, a project with a .git, and the fake model.
type world struct {
	t    *testing.T
	host hosttest.Host
	fake *hosttest.Fake
	home string
	root string
	proj string
}

func newWorld(t *testing.T, fakeEnv ...string) *world {
	t.Helper()
	h := hosttest.Find(t)
	w := &world{t: t, host: h, home: t.TempDir()}
	w.root = filepath.Join(w.home, "memory")
	w.proj = filepath.Join(t.TempDir(), "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(w.proj, ".git"), 0o755))
	w.fake = h.StartFake(t, fakeEnv...)
	t.Cleanup(w.stopServer)
	return w
}

// dshmem runs the binary on the world's root and returns its stdout.
func (w *world) dshmem(args ...string) string {
	w.t.Helper()
	out, err := w.try(args...)
	require.NoError(w.t, err, "dshmem %s: %v\n%s", strings.Join(args, " "), err, out)
	return out
}

func (w *world) try(args ...string) (string, error) {
	cmd := exec.Command(dshmemBin, append([]string{"--root", w.root}, args...)...)
	cmd.Env = append(os.Environ(), "DSH_HOME="+w.home)
	cmd.Dir = w.proj
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (w *world) install() string {
	w.t.Helper()
	return w.dshmem("dsh", "install", "--dsh-home", w.home, "--binary", dshmemBin)
}

func (w *world) play(proj string, steps ...hosttest.Step) []hosttest.TraceEvent {
	w.t.Helper()
	return w.host.Play(w.t, w.home, proj, w.fake, steps, "DSHMEM_PLUGIN_TRACE="+filepath.Join(w.home, "plugin-trace.jsonl"))
}

// serverPID is the pid in serve.json, or 0.
func (w *world) serverPID() int {
	b, err := os.ReadFile(filepath.Join(w.root, "serve.json"))
	if err != nil {
		return 0
	}
	var info struct {
		PID int `json:"pid"`
	}
	json.Unmarshal(b, &info)
	return info.PID
}

// stopServer stops the server the plugin started, and waits for it.
func (w *world) stopServer() { hosttest.StopServer(w.root) }

// bySession groups the logged requests by the session's first prompt.
func bySession(reqs []hosttest.Request) map[string][]hosttest.Request {
	out := map[string][]hosttest.Request{}
	for _, r := range reqs {
		out[firstPrompt(r)] = append(out[firstPrompt(r)], r)
	}
	return out
}

func firstPrompt(r hosttest.Request) string {
	for _, m := range r.Messages {
		if m.Role == "user" && !strings.HasPrefix(m.Content, "Current runtime context") {
			return m.Content
		}
	}
	return ""
}

// reached reports whether some request carried prompt as its newest user
// message: the turn got as far as the model. (The driver traces a turn
// when the agent is idle again, which a failed turn also is.)
func reached(reqs []hosttest.Request, prompt string) bool {
	for _, r := range reqs {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			m := r.Messages[i]
			if m.Role == "user" && !strings.HasPrefix(m.Content, "Current runtime context") {
				if m.Content == prompt {
					return true
				}
				break
			}
		}
	}
	return false
}

// contexts lists the runtime-context snapshots of a request, oldest first.
func contexts(r hosttest.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, "Current runtime context") {
			out = append(out, m.Content)
		}
	}
	return out
}

const (
	factEN = "remember that we deploy the billing api with helm charts"
	factZH = "记住：我们的数据库是 PostgreSQL 16，不再用 MySQL"
)

func TestHostMemory(t *testing.T) {
	w := newWorld(t)
	w.install()

	evs := w.play(w.proj,
		hosttest.Step{Session: "A", Say: factEN},
		hosttest.Step{Session: "A", Say: factZH},
		hosttest.Step{Dispose: "A"},
		hosttest.Step{Session: "B", Say: "how do we ship the billing service?"},
		hosttest.Step{Session: "B", Say: "and which database again?"},
		hosttest.Step{Dispose: "B"},
		hosttest.Step{Session: "C", Say: "hello again"},
		hosttest.Step{Session: "C", Say: "one more turn"},
	)
	ids := hosttest.SessionIDs(evs)
	sessions := bySession(w.fake.Requests(t))
	a, b, c := sessions[factEN], sessions["how do we ship the billing service?"], sessions["hello again"]
	require.NotEqualValues(t, 0, len(a), "requests per session: A %d, B %d, C %d; want some of each", len(a), len(b), len(c))
	require.NotEqualValues(t, 0, len(b), "requests per session: A %d, B %d, C %d; want some of each", len(a), len(b), len(c))
	require.NotEqualValues(t, 0, len(c), "requests per session: A %d, B %d, C %d; want some of each", len(a), len(b), len(c))

	t.Run("FactsReachTheNextSession", func(t *testing.T) {
		sys := b[0].System()
		for _, want := range []string{"deploy the billing api with helm charts", "我们的数据库是 PostgreSQL 16"} {
			assert.Contains(t, sys, want, "session B's system prompt lacks %q:\n%s", want, sys)
		}
		assert.False(t, !strings.Contains(sys, `<memory-reference source="dshmem"`) || !strings.Contains(sys, "not instructions"), "the memory is not framed as reference material:\n%s", sys)
		assert.NotContains(t, a[0].System(), "memory-reference", "session A's system prompt holds memory before anything was learned:\n%s", a[0].System())
	})

	t.Run("SystemPromptStable", func(t *testing.T) {
		want := b[0].System()
		for i, r := range append(append([]hosttest.Request(nil), b...), c...) {
			got := r.System()
			require.Equal(t, want, got, "request %d of sessions B and C: system prompt differs from the first one of B; nothing new was learned\n got: %q\nwant: %q", i, got, want)
		}
		require.False(t, len(b)+len(c) < 4, "%d requests in B and C; want several steps and turns", len(b)+len(c))
	})

	t.Run("ToolsOffered", func(t *testing.T) {
		for _, name := range []string{"memory_search", "memory_remember", "memory_forget"} {
			assert.True(t, b[0].HasTool(name), "tool %s is not offered to the model", name)
		}
	})

	t.Run("NothingLearnedFromInjectedText", func(t *testing.T) {
		out := w.dshmem("entries", "--json")
		var entries []struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatalf("entries --json: %v\n%s", err, out)
		}
		assert.Len(t, entries, 2, "%d entries, want the 2 facts said by the user:\n%s", len(entries), out)
		for _, e := range entries {
			for _, bad := range []string{"Current runtime context", "memory-reference", "dshmem memory", "reference material"} {
				assert.NotContains(t, e.Content, bad, "entry learned from injected text (%q): %s", bad, e.Content)
			}
		}
	})

	t.Run("SessionEndsRecorded", func(t *testing.T) {
		out := w.dshmem("sql", "--json", "SELECT session FROM events WHERE type = 'session/end' ORDER BY session")
		for _, name := range []string{"A", "B", "C"} {
			assert.Contains(t, out, ids[name], "no session/end for session %s (%s) (C ends at host exit):\n%s", name, ids[name], out)
		}
	})
}

func TestHostTools(t *testing.T) {
	w := newWorld(t)
	w.install()
	var en struct {
		ID string `json:"id"`
	}
	out := w.dshmem("remember", "--cwd", w.proj, "--json", "The billing api is deployed with helm charts from deploy/helm")
	err := json.Unmarshal([]byte(out), &en)
	require.NoError(t, err, "remember --json: %v\n%s", err, out)
	require.NotEqualValues(t, "", en.ID, "remember --json: %v\n%s", err, out)

	t.Run("Search", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_search",{"query":"how is billing deployed"}]]`)
		w.play(w.proj, hosttest.Step{Session: "S", Say: "look up how billing is deployed"})
		res := toolResults(w.fake.Requests(t))
		require.NotEqualValues(t, 0, len(res), "no tool result reached the model")
		assert.False(t, !strings.Contains(res[0], "deployed with helm charts") || !strings.Contains(res[0], "["+en.ID+"]"), "memory_search result lacks the fact or its id %s:\n%s", en.ID, res[0])
		assert.False(t, len(res[0]) > 4096, "tool result is %d bytes, over its 4096-byte bound", len(res[0]))
	})

	t.Run("Remember", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_remember",{"content":"The staging cluster is called kestrel","type":"fact"}]]`)
		w.play(w.proj, hosttest.Step{Session: "R", Say: "note the staging cluster name"})
		res := toolResults(w.fake.Requests(t))
		require.NotEqualValues(t, 0, len(res), "memory_remember result: %q", res)
		require.Contains(t, res[0], "Remembered as m-", "memory_remember result: %q", res)
		require.Contains(t, res[0], "this workspace", "memory_remember result: %q", res)
		out := w.dshmem("entries", "--cwd", w.proj)
		assert.Contains(t, out, "kestrel", "the remembered fact is not among the workspace's entries:\n%s", out)
		g := w.dshmem("entries", "--stream", "global")
		assert.NotContains(t, g, "kestrel", "a workspace fact went to the global scope:\n%s", g)
	})

	t.Run("Forget", func(t *testing.T) {
		w.fake = w.host.StartFake(t, fmt.Sprintf(`FAKE_TOOLS=[["memory_forget",{"id":%q,"reason":"moved to argo"}]]`, en.ID))
		w.play(w.proj, hosttest.Step{Session: "F", Say: "forget the helm note, we moved"})
		res := toolResults(w.fake.Requests(t))
		require.NotEqualValues(t, 0, len(res), "memory_forget result: %q", res)
		require.Contains(t, res[0], "Forgot "+en.ID, "memory_forget result: %q", res)
		out := w.dshmem("entries", "--cwd", w.proj, "--status", "forgotten")
		assert.Contains(t, out, en.ID, "%s is not forgotten:\n%s", en.ID, out)
	})

	t.Run("ErrorIsAToolError", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_forget",{"id":"m-0000000000000000"}]]`)
		w.play(w.proj, hosttest.Step{Session: "E", Say: "forget something that is not there"})
		res := toolResults(w.fake.Requests(t))
		require.NotEqualValues(t, 0, len(res), "memory_forget of an unknown id: %q; want the server's error as the tool result", res)
		require.Contains(t, res[0], "no entry m-0000000000000000", "memory_forget of an unknown id: %q; want the server's error as the tool result", res)
	})
}

// toolResults lists the tool messages of the last request, in order.
func toolResults(reqs []hosttest.Request) []string {
	if len(reqs) == 0 {
		return nil
	}
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestHostTemplateText(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "Render the banner with {{cwd}} and {{ user.name }}; a lone }} and {{ stay too")
	evs := w.play(w.proj,
		hosttest.Step{Session: "T", Say: "show me the banner template"},
		hosttest.Step{Session: "T", Say: "and again"})
	turns := 0
	for _, ev := range evs {
		if ev.Ev == "turn" {
			turns++
		}
	}
	require.EqualValues(t, 2, turns, "%d turns completed, want 2:\n%v", turns, evs)
	reqs := w.fake.Requests(t)
	require.True(t, reached(reqs, "show me the banner template"), "the turns did not reach the model")
	require.True(t, reached(reqs, "and again"), "the turns did not reach the model")
	sys := reqs[0].System()
	assert.Contains(t, sys, "{{cwd}} and {{ user.name }}; a lone }} and {{ stay too", "the remembered text does not reach the model verbatim:\n%s", sys)
}

func TestHostPromptCache(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "We release on Thursdays after the staging soak")
	w.play(w.proj, hosttest.Step{Session: "X", Say: "first host, first session"}, hosttest.Step{Session: "X", Say: "second turn"},
		hosttest.Step{Dispose: "X"}, hosttest.Step{Resume: "X", Say: "after a resume"})
	w.play(w.proj, hosttest.Step{Session: "Y", Say: "second host process"})
	reqs := w.fake.Requests(t)
	require.False(t, len(reqs) < 4, "%d requests, the resumed turn reached the model: %v", len(reqs), reached(reqs, "after a resume"))
	require.True(t, reached(reqs, "after a resume"), "%d requests, the resumed turn reached the model: %v", len(reqs), reached(reqs, "after a resume"))
	want := reqs[0].System()
	require.Contains(t, want, "We release on Thursdays", "the workspace memory is not in the system prompt:\n%s", want)
	for i, r := range reqs {
		require.Equal(t, want, r.System(), "request %d: the system prompt changed across steps, turns, sessions or a host restart with nothing learned", i)
	}
	// A fact changes (the CLI forwards to the running server): the next
	// session's prompt holds it.
	w.dshmem("remember", "--cwd", w.proj, "We release on Tuesdays now")
	w.play(w.proj, hosttest.Step{Session: "Z", Say: "after the change"})
	after := w.fake.Requests(t)
	last := after[len(after)-1].System()
	assert.False(t, last == want || !strings.Contains(last, "We release on Tuesdays now"), "the system prompt did not change with the new fact:\n%s", last)
}

// packetOf is the dshmem packet inside a runtime-context snapshot, or "".
func packetOf(snapshot string) string {
	i := strings.Index(snapshot, "[dshmem memory")
	if i < 0 {
		return ""
	}
	rest := snapshot[i:]
	if j := strings.Index(rest, "\n\n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestHostPackets(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "--type", "fix", "When the billing migration fails with a lock timeout, rerun it with --lock-wait 60")
	w.dshmem("remember", "--cwd", w.proj, "--type", "decision", "Invoices are rendered with wkhtmltopdf in the billing worker")
	w.play(w.proj,
		hosttest.Step{Session: "P", Say: "the billing migration fails with a lock timeout"},
		hosttest.Step{Session: "P", Say: "how are invoices rendered in the billing worker?"},
		hosttest.Step{Session: "P", Say: "thanks, carry on"})
	reqs := w.fake.Requests(t)
	require.False(t, len(reqs) < 4, "%d requests, want several steps", len(reqs))
	last := reqs[len(reqs)-1]
	prev, packets := "", 0
	for i, snap := range contexts(last) {
		p := packetOf(snap)
		if p == "" {
			continue
		}
		packets++
		assert.NotEqual(t, prev, p, "snapshot %d repeats the packet unchanged:\n%s", i, p)
		prev = p
	}
	require.NotEqualValues(t, 0, packets, "no packet reached the model in %d requests; the first prompt names a remembered fix", len(reqs))
	assert.Contains(t, strings.Join(contexts(last), "\n"), "--lock-wait 60", "the packet for the failing migration lacks the remembered fix:\n%s", strings.Join(contexts(last), "\n---\n"))
	// Every request carries the whole conversation: the number of
	// snapshots never exceeds one per step, and the packet is not re-sent
	// on steps where it did not change.
	n := len(contexts(last))
	assert.False(t, n > len(reqs), "%d snapshots in %d steps", n, len(reqs))
}

func TestHostServerKilled(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "The on-call rotation lives in ops/oncall.yaml")
	run := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{
		{Session: "K", Say: "who is on call?"},
		{PauseMs: 3000},
		{Session: "K", Say: "turn after the server died"},
		{Session: "L", Say: "a new session"},
	})
	first := run.WaitFor(t, time.Minute, func(ev hosttest.TraceEvent) bool { return ev.Ev == "turn" })
	pid := w.serverPID()
	require.NotEqualValues(t, 0, pid, "no server after the first turn")
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	killed := time.Now().UnixMilli()
	evs := run.Wait(t)
	require.False(t, killed > first.T+3000, "the kill came %d ms after the first turn, after the pause ended: the test proved nothing", killed-first.T)
	turns := 0
	for _, ev := range evs {
		if ev.Ev == "turn" {
			turns++
		}
	}
	require.EqualValues(t, 3, turns, "%d turns traced; the turn after the kill reached the model: %v", turns, reached(w.fake.Requests(t), "turn after the server died"))
	require.True(t, reached(w.fake.Requests(t), "turn after the server died"), "%d turns traced; the turn after the kill reached the model: %v", turns, reached(w.fake.Requests(t), "turn after the server died"))
	np := w.serverPID()
	require.NotEqualValues(t, 0, np, "the new session did not start a new server (serve.json pid %d, killed %d)", np, pid)
	require.NotEqual(t, pid, np, "the new session did not start a new server (serve.json pid %d, killed %d)", np, pid)
	require.Nil(t, syscall.Kill(np, 0), "the new session did not start a new server (serve.json pid %d, killed %d)", np, pid)
	sessions := bySession(w.fake.Requests(t))
	l := sessions["a new session"]
	assert.False(t, len(l) == 0 || !strings.Contains(l[0].System(), "ops/oncall.yaml"), "the session after the restart has no memory in its system prompt")
}

func TestHostInstallUninstall(t *testing.T) {
	w := newWorld(t)
	w.install()
	patch := filepath.Join(w.home, "cordis.patch.yml")
	once, err := os.ReadFile(patch)
	require.NoError(t, err)
	w.install()
	twice, _ := os.ReadFile(patch)
	require.Equal(t, twice, once, "a second install changed the patch file or added a row:\n%s", twice)
	require.EqualValues(t, 1, bytes.Count(twice, []byte("id: dshmem")), "a second install changed the patch file or added a row:\n%s", twice)
	w.dshmem("remember", "--cwd", w.proj, "The feature flags live in config/flags.toml")
	w.play(w.proj, hosttest.Step{Session: "I", Say: "where are the flags?"})
	if reqs := w.fake.Requests(t); len(reqs) == 0 || !strings.Contains(reqs[0].System(), "config/flags.toml") {
		t.Fatal("installed, but the memory did not reach the model")
	}
	w.stopServer()
	w.dshmem("dsh", "uninstall", "--dsh-home", w.home)
	w.fake = w.host.StartFake(t)
	w.play(w.proj, hosttest.Step{Session: "U", Say: "where are the flags, after uninstall?"})
	reqs := w.fake.Requests(t)
	require.NotEqualValues(t, 0, len(reqs), "the host did not reach the model after uninstall")
	for i, r := range reqs {
		b, _ := json.Marshal(r)
		for _, bad := range []string{"config/flags.toml", "memory-reference", "memory_search", "dshmem"} {
			assert.NotContains(t, string(b), string([]byte(bad)), "request %d after uninstall holds %q", i, bad)
		}
	}
	assert.EqualValues(t, 0, w.serverPID(), "a server was started after uninstall")
}

func TestHostNoServer(t *testing.T) {
	w := newWorld(t)
	// A binary that is gone by the time the host runs: the plugin cannot
	// start a server.
	gone := filepath.Join(t.TempDir(), "dshmem")
	b, err := os.ReadFile(dshmemBin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gone, b, 0o755))
	w.dshmem("dsh", "install", "--dsh-home", w.home, "--binary", gone)
	os.Remove(gone)
	run := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{
		{Session: "N", Say: "first turn without memory"},
		{Session: "N", Say: "second turn without memory"},
		{Session: "M", Say: "another session"},
	})
	evs := run.Wait(t)
	turns := 0
	for _, ev := range evs {
		if ev.Ev == "turn" {
			turns++
		}
	}
	reqs := w.fake.Requests(t)
	require.EqualValues(t, 3, turns, "%d turns traced; not every turn reached the model", turns)
	require.True(t, reached(reqs, "second turn without memory"), "%d turns traced; not every turn reached the model", turns)
	require.True(t, reached(reqs, "another session"), "%d turns traced; not every turn reached the model", turns)
	n := strings.Count(run.Output(), "[DSHMEM] Warning: dshmem:")
	assert.EqualValues(t, 1, n, "the host printed %d dshmem warnings, want exactly one:\n%s", n, run.Output())
	for i, r := range w.fake.Requests(t) {
		assert.False(t, strings.Contains(r.System(), "memory-reference") || strings.Contains(strings.Join(contexts(r), ""), "dshmem"), "request %d holds memory text with no server", i)
		assert.False(t, r.HasTool("memory_search") || r.HasTool("memory_remember") || r.HasTool("memory_forget"), "request %d offers memory tools with no server", i)
	}
}

func TestHostSubdirectory(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "The api gateway config is in infra/gateway.hcl")
	sub := filepath.Join(w.proj, "services", "api")
	w.play(sub, hosttest.Step{Session: "D", Say: "where is the gateway config?"})
	reqs := w.fake.Requests(t)
	require.NotEqualValues(t, 0, len(reqs), "a host started in %s does not reach the project's memory", sub)
	require.Contains(t, reqs[0].System(), "infra/gateway.hcl", "a host started in %s does not reach the project's memory", sub)
	// And the CLI from the subdirectory reaches it too.
	cmd := exec.Command(dshmemBin, "--root", w.root, "entries", "--cwd", sub)
	cmd.Env = append(os.Environ(), "DSH_HOME="+w.home)
	out, err := cmd.CombinedOutput()
	assert.False(t, err != nil || !strings.Contains(string(out), "infra/gateway.hcl"), "dshmem entries --cwd %s: %v\n%s", sub, err, out)
}

func TestHostSubagent(t *testing.T) {
	w := newWorld(t, `FAKE_TOOLS=[["subagent",{"description":"look around","prompt":"subagent: look around","run_in_background":false}]]`)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "The release checklist is docs/RELEASE.md")
	// Memory that goes back months with no backup: the maintenance
	// reminder is due, for the top-level session only.
	old := `{"id":"old:1","type":"user/message","time":"2026-01-05T10:00:00Z","session":"old","cwd":` + fmt.Sprintf("%q", w.proj) + `,"data":{"text":"an old note"}}`
	cmd := exec.Command(dshmemBin, "--root", w.root, "ingest")
	cmd.Stdin = strings.NewReader(old + "\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "ingest: %v\n%s", err, out)
	w.play(w.proj, hosttest.Step{Session: "P", Say: "delegate a look around"})
	reqs := w.fake.Requests(t)
	var parent, child []hosttest.Request
	for _, r := range reqs {
		switch firstPrompt(r) {
		case "delegate a look around":
			parent = append(parent, r)
		case "subagent: look around":
			child = append(child, r)
		}
	}
	require.NotEqualValues(t, 0, len(parent), "requests: parent %d, sub-agent %d; want both", len(parent), len(child))
	require.NotEqualValues(t, 0, len(child), "requests: parent %d, sub-agent %d; want both", len(parent), len(child))
	want := parent[0].System()
	require.Contains(t, want, "docs/RELEASE.md", "the parent's system prompt has no memory:\n%s", want)
	assert.Contains(t, strings.Join(contexts(parent[0]), ""), "backup due", "the top-level session did not get the maintenance reminder:\n%s", strings.Join(contexts(parent[0]), "\n---\n"))
	// The sub-agent gets exactly its parent's text, so the prompt prefix
	// is shared; a maintenance reminder never reaches it.
	for i, r := range child {
		assert.Equal(t, want, r.System(), "sub-agent request %d: system prompt differs from the parent's", i)
		assert.NotContains(t, strings.Join(contexts(r), ""), "dshmem maintenance", "sub-agent request %d carries the maintenance reminder", i)
	}
}

func TestHostExitEndsSessions(t *testing.T) {
	w := newWorld(t)
	w.install()
	tr := filepath.Join(w.home, "plugin-trace.jsonl")
	run := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{
		{Session: "H", Say: "remember that the audit log is kept for 400 days"},
		{PauseMs: 60000},
	}, "DSHMEM_PLUGIN_TRACE="+tr)
	run.WaitFor(t, time.Minute, func(ev hosttest.TraceEvent) bool { return ev.Ev == "turn" })
	ids := hosttest.SessionIDs(run.Events(t))
	run.Terminate(t)
	select {
	case <-waitDone(run):
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not stop within 30 s of SIGTERM")
	}
	// The open session's end came from the plugin's teardown, and it was
	// distilled at once: the fact is an entry.
	out := w.dshmem("sql", "--json", "SELECT session, json_extract(data, '$.reason') AS reason FROM events WHERE type = 'session/end'")
	if !strings.Contains(out, ids["H"]) || !strings.Contains(out, "host-exit") {
		ptrace, _ := os.ReadFile(tr)
		t.Fatalf("no session/end with reason host-exit for %s:\n%s\nplugin trace:\n%s\nhost:\n%s", ids["H"], out, ptrace, run.Output())
	}
	entries := w.dshmem("entries", "--cwd", w.proj)
	assert.Contains(t, entries, "400 days", "the ended session was not distilled:\n%s", entries)
}

func waitDone(r *hosttest.Run) <-chan struct{} {
	ch := make(chan struct{})
	go func() { r.Done(); close(ch) }()
	return ch
}

func TestHostTwoHostsOneServer(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "The feature flags live in config/flags.toml")
	// Two hosts booting at once in a fresh DSH home race on writing the
	// host's own profile files (one reads a half-written manifest or
	// cordis.yml and exits 1): run one headless session first, as any
	// user's home has, then stop the server it started, so the two hosts
	// below race to start one.
	w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{{Session: "warm", Say: "warm up the home"}}).Wait(t)
	w.stopServer()
	_, err := os.Stat(filepath.Join(w.root, "serve.json"))
	require.True(t, os.IsNotExist(err), "the warm-up's server is still registered: %v", err)
	require.NoError(t, os.Remove(filepath.Join(w.root, "serve.log")))
	r1 := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{{Session: "A", Say: "first host asks"}})
	r2 := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{{Session: "B", Say: "second host asks"}})
	r1.Wait(t)
	r2.Wait(t)
	log, err := os.ReadFile(filepath.Join(w.root, "serve.log"))
	require.NoError(t, err)
	t.Logf("serve.log:\n%s", log)
	n := strings.Count(string(log), "listening on")
	assert.EqualValues(t, 1, n, "%d servers listened, want one:\n%s", n, log)
	reqs := bySession(w.fake.Requests(t))
	for _, p := range []string{"first host asks", "second host asks"} {
		assert.False(t, len(reqs[p]) == 0 || !strings.Contains(reqs[p][0].System(), "config/flags.toml"), "the host that asked %q got no memory", p)
	}
}
