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
	if err := os.MkdirAll(filepath.Join(w.proj, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.fake = h.StartFake(t, fakeEnv...)
	t.Cleanup(w.stopServer)
	return w
}

// dshmem runs the binary on the world's root and returns its stdout.
func (w *world) dshmem(args ...string) string {
	w.t.Helper()
	out, err := w.try(args...)
	if err != nil {
		w.t.Fatalf("dshmem %s: %v\n%s", strings.Join(args, " "), err, out)
	}
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
	if len(a) == 0 || len(b) == 0 || len(c) == 0 {
		t.Fatalf("requests per session: A %d, B %d, C %d; want some of each", len(a), len(b), len(c))
	}

	t.Run("FactsReachTheNextSession", func(t *testing.T) {
		sys := b[0].System()
		for _, want := range []string{"deploy the billing api with helm charts", "我们的数据库是 PostgreSQL 16"} {
			if !strings.Contains(sys, want) {
				t.Errorf("session B's system prompt lacks %q:\n%s", want, sys)
			}
		}
		if !strings.Contains(sys, `<memory-reference source="dshmem"`) || !strings.Contains(sys, "not instructions") {
			t.Errorf("the memory is not framed as reference material:\n%s", sys)
		}
		if strings.Contains(a[0].System(), "memory-reference") {
			t.Errorf("session A's system prompt holds memory before anything was learned:\n%s", a[0].System())
		}
	})

	t.Run("SystemPromptStable", func(t *testing.T) {
		want := b[0].System()
		for i, r := range append(append([]hosttest.Request(nil), b...), c...) {
			if got := r.System(); got != want {
				t.Fatalf("request %d of sessions B and C: system prompt differs from the first one of B; nothing new was learned\n got: %q\nwant: %q", i, got, want)
			}
		}
		if len(b)+len(c) < 4 {
			t.Fatalf("%d requests in B and C; want several steps and turns", len(b)+len(c))
		}
	})

	t.Run("ToolsOffered", func(t *testing.T) {
		for _, name := range []string{"memory_search", "memory_remember", "memory_forget"} {
			if !b[0].HasTool(name) {
				t.Errorf("tool %s is not offered to the model", name)
			}
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
		if len(entries) != 2 {
			t.Errorf("%d entries, want the 2 facts said by the user:\n%s", len(entries), out)
		}
		for _, e := range entries {
			for _, bad := range []string{"Current runtime context", "memory-reference", "dshmem memory", "reference material"} {
				if strings.Contains(e.Content, bad) {
					t.Errorf("entry learned from injected text (%q): %s", bad, e.Content)
				}
			}
		}
	})

	t.Run("SessionEndsRecorded", func(t *testing.T) {
		out := w.dshmem("sql", "--json", "SELECT session FROM events WHERE type = 'session/end' ORDER BY session")
		for _, name := range []string{"A", "B", "C"} {
			if !strings.Contains(out, ids[name]) {
				t.Errorf("no session/end for session %s (%s) (C ends at host exit):\n%s", name, ids[name], out)
			}
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
	if err := json.Unmarshal([]byte(out), &en); err != nil || en.ID == "" {
		t.Fatalf("remember --json: %v\n%s", err, out)
	}

	t.Run("Search", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_search",{"query":"how is billing deployed"}]]`)
		w.play(w.proj, hosttest.Step{Session: "S", Say: "look up how billing is deployed"})
		res := toolResults(w.fake.Requests(t))
		if len(res) == 0 {
			t.Fatal("no tool result reached the model")
		}
		if !strings.Contains(res[0], "deployed with helm charts") || !strings.Contains(res[0], "["+en.ID+"]") {
			t.Errorf("memory_search result lacks the fact or its id %s:\n%s", en.ID, res[0])
		}
		if len(res[0]) > 4096 {
			t.Errorf("tool result is %d bytes, over its 4096-byte bound", len(res[0]))
		}
	})

	t.Run("Remember", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_remember",{"content":"The staging cluster is called kestrel","type":"fact"}]]`)
		w.play(w.proj, hosttest.Step{Session: "R", Say: "note the staging cluster name"})
		res := toolResults(w.fake.Requests(t))
		if len(res) == 0 || !strings.Contains(res[0], "Remembered as m-") || !strings.Contains(res[0], "this workspace") {
			t.Fatalf("memory_remember result: %q", res)
		}
		out := w.dshmem("entries", "--cwd", w.proj)
		if !strings.Contains(out, "kestrel") {
			t.Errorf("the remembered fact is not among the workspace's entries:\n%s", out)
		}
		if g := w.dshmem("entries", "--stream", "global"); strings.Contains(g, "kestrel") {
			t.Errorf("a workspace fact went to the global scope:\n%s", g)
		}
	})

	t.Run("Forget", func(t *testing.T) {
		w.fake = w.host.StartFake(t, fmt.Sprintf(`FAKE_TOOLS=[["memory_forget",{"id":%q,"reason":"moved to argo"}]]`, en.ID))
		w.play(w.proj, hosttest.Step{Session: "F", Say: "forget the helm note, we moved"})
		res := toolResults(w.fake.Requests(t))
		if len(res) == 0 || !strings.Contains(res[0], "Forgot "+en.ID) {
			t.Fatalf("memory_forget result: %q", res)
		}
		if out := w.dshmem("entries", "--cwd", w.proj, "--status", "forgotten"); !strings.Contains(out, en.ID) {
			t.Errorf("%s is not forgotten:\n%s", en.ID, out)
		}
	})

	t.Run("ErrorIsAToolError", func(t *testing.T) {
		w.fake = w.host.StartFake(t, `FAKE_TOOLS=[["memory_forget",{"id":"m-0000000000000000"}]]`)
		w.play(w.proj, hosttest.Step{Session: "E", Say: "forget something that is not there"})
		res := toolResults(w.fake.Requests(t))
		if len(res) == 0 || !strings.Contains(res[0], "no entry m-0000000000000000") {
			t.Fatalf("memory_forget of an unknown id: %q; want the server's error as the tool result", res)
		}
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
	if turns != 2 {
		t.Fatalf("%d turns completed, want 2:\n%v", turns, evs)
	}
	reqs := w.fake.Requests(t)
	if !reached(reqs, "show me the banner template") || !reached(reqs, "and again") {
		t.Fatal("the turns did not reach the model")
	}
	if sys := reqs[0].System(); !strings.Contains(sys, "{{cwd}} and {{ user.name }}; a lone }} and {{ stay too") {
		t.Errorf("the remembered text does not reach the model verbatim:\n%s", sys)
	}
}

func TestHostPromptCache(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "We release on Thursdays after the staging soak")
	w.play(w.proj, hosttest.Step{Session: "X", Say: "first host, first session"}, hosttest.Step{Session: "X", Say: "second turn"},
		hosttest.Step{Dispose: "X"}, hosttest.Step{Resume: "X", Say: "after a resume"})
	w.play(w.proj, hosttest.Step{Session: "Y", Say: "second host process"})
	reqs := w.fake.Requests(t)
	if len(reqs) < 4 || !reached(reqs, "after a resume") {
		t.Fatalf("%d requests, the resumed turn reached the model: %v", len(reqs), reached(reqs, "after a resume"))
	}
	want := reqs[0].System()
	if !strings.Contains(want, "We release on Thursdays") {
		t.Fatalf("the workspace memory is not in the system prompt:\n%s", want)
	}
	for i, r := range reqs {
		if r.System() != want {
			t.Fatalf("request %d: the system prompt changed across steps, turns, sessions or a host restart with nothing learned", i)
		}
	}
	// A fact changes (the CLI forwards to the running server): the next
	// session's prompt holds it.
	w.dshmem("remember", "--cwd", w.proj, "We release on Tuesdays now")
	w.play(w.proj, hosttest.Step{Session: "Z", Say: "after the change"})
	after := w.fake.Requests(t)
	last := after[len(after)-1].System()
	if last == want || !strings.Contains(last, "We release on Tuesdays now") {
		t.Errorf("the system prompt did not change with the new fact:\n%s", last)
	}
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
	if len(reqs) < 4 {
		t.Fatalf("%d requests, want several steps", len(reqs))
	}
	last := reqs[len(reqs)-1]
	prev, packets := "", 0
	for i, snap := range contexts(last) {
		p := packetOf(snap)
		if p == "" {
			continue
		}
		packets++
		if p == prev {
			t.Errorf("snapshot %d repeats the packet unchanged:\n%s", i, p)
		}
		prev = p
	}
	if packets == 0 {
		t.Fatalf("no packet reached the model in %d requests; the first prompt names a remembered fix", len(reqs))
	}
	if !strings.Contains(strings.Join(contexts(last), "\n"), "--lock-wait 60") {
		t.Errorf("the packet for the failing migration lacks the remembered fix:\n%s", strings.Join(contexts(last), "\n---\n"))
	}
	// Every request carries the whole conversation: the number of
	// snapshots never exceeds one per step, and the packet is not re-sent
	// on steps where it did not change.
	if n := len(contexts(last)); n > len(reqs) {
		t.Errorf("%d snapshots in %d steps", n, len(reqs))
	}
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
	if pid == 0 {
		t.Fatal("no server after the first turn")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now().UnixMilli()
	evs := run.Wait(t)
	if killed > first.T+3000 {
		t.Fatalf("the kill came %d ms after the first turn, after the pause ended: the test proved nothing", killed-first.T)
	}
	turns := 0
	for _, ev := range evs {
		if ev.Ev == "turn" {
			turns++
		}
	}
	if turns != 3 || !reached(w.fake.Requests(t), "turn after the server died") {
		t.Fatalf("%d turns traced; the turn after the kill reached the model: %v", turns, reached(w.fake.Requests(t), "turn after the server died"))
	}
	if np := w.serverPID(); np == 0 || np == pid || syscall.Kill(np, 0) != nil {
		t.Fatalf("the new session did not start a new server (serve.json pid %d, killed %d)", np, pid)
	}
	sessions := bySession(w.fake.Requests(t))
	l := sessions["a new session"]
	if len(l) == 0 || !strings.Contains(l[0].System(), "ops/oncall.yaml") {
		t.Errorf("the session after the restart has no memory in its system prompt")
	}
}

func TestHostInstallUninstall(t *testing.T) {
	w := newWorld(t)
	w.install()
	patch := filepath.Join(w.home, "cordis.patch.yml")
	once, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	w.install()
	twice, _ := os.ReadFile(patch)
	if !bytes.Equal(once, twice) || bytes.Count(twice, []byte("id: dshmem")) != 1 {
		t.Fatalf("a second install changed the patch file or added a row:\n%s", twice)
	}
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
	if len(reqs) == 0 {
		t.Fatal("the host did not reach the model after uninstall")
	}
	for i, r := range reqs {
		b, _ := json.Marshal(r)
		for _, bad := range []string{"config/flags.toml", "memory-reference", "memory_search", "dshmem"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("request %d after uninstall holds %q", i, bad)
			}
		}
	}
	if w.serverPID() != 0 {
		t.Errorf("a server was started after uninstall")
	}
}

func TestHostNoServer(t *testing.T) {
	w := newWorld(t)
	// A binary that is gone by the time the host runs: the plugin cannot
	// start a server.
	gone := filepath.Join(t.TempDir(), "dshmem")
	b, err := os.ReadFile(dshmemBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gone, b, 0o755); err != nil {
		t.Fatal(err)
	}
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
	if turns != 3 || !reached(reqs, "second turn without memory") || !reached(reqs, "another session") {
		t.Fatalf("%d turns traced; not every turn reached the model", turns)
	}
	if n := strings.Count(run.Output(), "[DSHMEM] Warning: dshmem:"); n != 1 {
		t.Errorf("the host printed %d dshmem warnings, want exactly one:\n%s", n, run.Output())
	}
	for i, r := range w.fake.Requests(t) {
		if strings.Contains(r.System(), "memory-reference") || strings.Contains(strings.Join(contexts(r), ""), "dshmem") {
			t.Errorf("request %d holds memory text with no server", i)
		}
		if r.HasTool("memory_search") || r.HasTool("memory_remember") || r.HasTool("memory_forget") {
			t.Errorf("request %d offers memory tools with no server", i)
		}
	}
}

func TestHostSubdirectory(t *testing.T) {
	w := newWorld(t)
	w.install()
	w.dshmem("remember", "--cwd", w.proj, "The api gateway config is in infra/gateway.hcl")
	sub := filepath.Join(w.proj, "services", "api")
	w.play(sub, hosttest.Step{Session: "D", Say: "where is the gateway config?"})
	reqs := w.fake.Requests(t)
	if len(reqs) == 0 || !strings.Contains(reqs[0].System(), "infra/gateway.hcl") {
		t.Fatalf("a host started in %s does not reach the project's memory", sub)
	}
	// And the CLI from the subdirectory reaches it too.
	cmd := exec.Command(dshmemBin, "--root", w.root, "entries", "--cwd", sub)
	cmd.Env = append(os.Environ(), "DSH_HOME="+w.home)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "infra/gateway.hcl") {
		t.Errorf("dshmem entries --cwd %s: %v\n%s", sub, err, out)
	}
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
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
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
	if len(parent) == 0 || len(child) == 0 {
		t.Fatalf("requests: parent %d, sub-agent %d; want both", len(parent), len(child))
	}
	want := parent[0].System()
	if !strings.Contains(want, "docs/RELEASE.md") {
		t.Fatalf("the parent's system prompt has no memory:\n%s", want)
	}
	if !strings.Contains(strings.Join(contexts(parent[0]), ""), "backup due") {
		t.Errorf("the top-level session did not get the maintenance reminder:\n%s", strings.Join(contexts(parent[0]), "\n---\n"))
	}
	// The sub-agent gets exactly its parent's text, so the prompt prefix
	// is shared; a maintenance reminder never reaches it.
	for i, r := range child {
		if r.System() != want {
			t.Errorf("sub-agent request %d: system prompt differs from the parent's", i)
		}
		if strings.Contains(strings.Join(contexts(r), ""), "dshmem maintenance") {
			t.Errorf("sub-agent request %d carries the maintenance reminder", i)
		}
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
	if entries := w.dshmem("entries", "--cwd", w.proj); !strings.Contains(entries, "400 days") {
		t.Errorf("the ended session was not distilled:\n%s", entries)
	}
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
	// host's own profile manifest (one reads it half-written and exits 1):
	// boot once first, as any user's home has been.
	if r := w.host.DumpConfig(t, w.home); r.Code != 0 {
		t.Fatalf("dsh --dump-config: exit %d\n%s", r.Code, r.Output)
	}
	r1 := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{{Session: "A", Say: "first host asks"}})
	r2 := w.host.Start(t, w.home, w.proj, w.fake, []hosttest.Step{{Session: "B", Say: "second host asks"}})
	r1.Wait(t)
	r2.Wait(t)
	log, err := os.ReadFile(filepath.Join(w.root, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("serve.log:\n%s", log)
	if n := strings.Count(string(log), "listening on"); n != 1 {
		t.Errorf("%d servers listened, want one:\n%s", n, log)
	}
	reqs := bySession(w.fake.Requests(t))
	for _, p := range []string{"first host asks", "second host asks"} {
		if len(reqs[p]) == 0 || !strings.Contains(reqs[p][0].System(), "config/flags.toml") {
			t.Errorf("the host that asked %q got no memory", p)
		}
	}
}
