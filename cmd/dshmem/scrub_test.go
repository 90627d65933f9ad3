package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"dshmem/observer/scrub"
)

const (
	scrubToken = "TOKEN-7qv2xk"
	keepToken  = "KEEP-9wd4mn"
)

// scrubRoot remembers an entry holding scrubToken in a workspace and one
// in the global scope, and one holding keepToken; it forgets the first
// two and returns the kept entry's id.
func scrubRoot(t *testing.T, run func(args ...string) (int, string, string), root string) (forgotten []string, kept string) {
	t.Helper()
	remember := func(args ...string) string {
		code, out, errs := run(append([]string{"--root", root, "remember"}, args...)...)
		require.EqualValues(t, 0, code, "remember: %s", errs)
		return strings.TrimSpace(out)
	}
	forgotten = []string{
		remember("--cwd", "/home/u/proj", "The staging password hint is "+scrubToken+" (ask Ann)"),
		remember("--global", "My locker code "+scrubToken+" at work"),
	}
	kept = remember("--cwd", "/home/u/proj", "Deploy with blue-green "+keepToken)
	for _, id := range forgotten {
		code, _, errs := run("--root", root, "forget", id)
		require.EqualValues(t, 0, code, "forget: %s", errs)
	}
	return forgotten, kept
}

// requireGone checks that tok is in no file under root (raw bytes), in
// no decompressed segment (stock zstd -dc, when installed), and that
// keepToken still is.
func requireGone(t *testing.T, root, tok string) {
	t.Helper()
	var segs []string
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.False(t, bytes.Contains(b, []byte(tok)), "%s holds %s", p, tok)
		if strings.HasSuffix(p, ".jsonl.zst") {
			segs = append(segs, p)
		}
		return nil
	}))
	require.NotEmpty(t, segs)
	zstd, err := exec.LookPath("zstd")
	if err != nil {
		t.Logf("zstd is not installed: segments checked through dshmem's reader only")
		return
	}
	all := ""
	for _, p := range segs {
		out, err := exec.Command(zstd, "-dc", p).Output()
		require.NoError(t, err, "zstd -dc %s", p)
		require.NotContains(t, string(out), tok, "zstd -dc %s", p)
		all += string(out)
	}
	require.Contains(t, all, keepToken, "the kept entry must stay in the log")
}

func TestScrubCommand(t *testing.T) {
	root := t.TempDir()
	run := func(args ...string) (int, string, string) { return cli(t, "", args...) }
	forgotten, kept := scrubRoot(t, run, root)

	code, out, errs := cli(t, "", "--root", root, "scrub", "--dry-run", "--json")
	require.EqualValues(t, 0, code, "scrub --dry-run: %s", errs)
	var dry scrub.Report
	require.NoError(t, json.Unmarshal([]byte(out), &dry), "%s", out)
	require.True(t, dry.DryRun)
	require.Equal(t, 2, dry.Entries)
	require.Equal(t, 2, dry.Events, "the two remember events: got %+v", dry)

	code, out, errs = cli(t, "", "--root", root, "scrub")
	require.EqualValues(t, 0, code, "scrub: %s", errs)
	require.Contains(t, out, "scrubbed 2 forgotten entries")
	require.Contains(t, out, "index.db rebuilt and vacuumed")
	requireGone(t, root, scrubToken)

	code, out, errs = cli(t, "", "--root", root, "verify")
	require.EqualValues(t, 0, code, "verify after scrub: %s %s", out, errs)
	require.Contains(t, out, "scrubbed", "verify names the scrubbed seqs: %s", out)
	code, out, errs = cli(t, "", "--root", root, "replay", "--verify")
	require.EqualValues(t, 0, code, "replay --verify after scrub: %s %s", out, errs)

	es := cliEntries(t, root, "--status", "active")
	require.Len(t, es, 1)
	require.Equal(t, kept, es[0]["id"])
	require.Contains(t, es[0]["content"], keepToken)
	code, out, errs = cli(t, "", "--root", root, "history", forgotten[0])
	require.EqualValues(t, 0, code, "history: %s", errs)
	require.Contains(t, out, scrub.Marker)
	require.Contains(t, out, "erased by 'dshmem scrub'")
	require.Contains(t, out, "forgotten")

	code, out, _ = cli(t, "", "--root", root, "scrub")
	require.EqualValues(t, 0, code)
	require.Contains(t, out, "0 events", "a second scrub finds nothing: %s", out)

	t.Run("Help", func(t *testing.T) {
		code, out, errs := cli(t, "", "scrub", "--help")
		require.EqualValues(t, 0, code, "%s", errs)
		for _, want := range []string{"--sources", "--dry-run", "--json", "Examples:", "dshmem sync"} {
			require.Contains(t, out+errs, want)
		}
	})
	t.Run("ErrArgs", func(t *testing.T) {
		code, _, errs := cli(t, "", "--root", root, "scrub", "m-1")
		require.EqualValues(t, 2, code, "%s", errs)
		require.Contains(t, errs, "takes no arguments")
	})
}

func TestScrubForwardedToServer(t *testing.T) {
	root := t.TempDir()
	run := func(args ...string) (int, string, string) { return cli(t, "", args...) }
	scrubRoot(t, run, root)
	startInProcess(t, root)
	code, out, errs := cli(t, "", "--root", root, "scrub", "--json")
	require.EqualValues(t, 0, code, "scrub: %s", errs)
	require.Contains(t, errs, "runs the scrub")
	var rep scrub.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s", out)
	require.Equal(t, 2, rep.Events)
	requireGone(t, root, scrubToken)
	// The server goes on writing.
	code, _, errs = cli(t, "", "--root", root, "remember", "--global", "after the scrub")
	require.EqualValues(t, 0, code, "%s", errs)
}

// TestScrubCrash kills a real `dshmem scrub` with SIGKILL at each of its
// durable steps, each time it says READY there: afterwards the log
// verifies, the root opens, and a second scrub finishes the job, after
// which the token is gone everywhere and replay --verify passes.
func TestScrubCrash(t *testing.T) {
	bin := buildDshmem(t)
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, out.String(), errb.String()
	}
	template := t.TempDir()
	forgotten, _ := scrubRoot(t, run, template)
	steps := []string{"journal", "segment-written", "segment-renamed", "segment-synced", "segment-renamed:2",
		"log", "rebuilt", "index", "files", "vacuum", "done"}
	for _, step := range steps {
		t.Run(strings.ReplaceAll(step, ":", "#"), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			copyTree(t, template, root)
			cmd := exec.Command(bin, "--root", root, "scrub")
			cmd.Env = append(os.Environ(), scrubPauseEnv+"="+step)
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stderr)
			ready := false
			for sc.Scan() {
				if sc.Text() == "READY "+step {
					ready = true
					break
				}
			}
			require.True(t, ready, "the child never reached step %s", step)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()

			code, out, errs := run("--root", root, "verify")
			require.EqualValues(t, 0, code, "verify after a kill at %s: %s %s", step, out, errs)
			code, _, errs = run("--root", root, "entries", "--json")
			require.EqualValues(t, 0, code, "the root must open after a kill at %s: %s", step, errs)
			_, jerr := os.Stat(filepath.Join(root, scrub.JournalFile))
			switch step {
			case "done":
				require.True(t, os.IsNotExist(jerr), "the journal is gone once done")
				requireGone(t, root, scrubToken)
			case "journal":
				// Nothing changed yet but the journal.
				require.NoError(t, jerr)
				code, out, errs := run("--root", root, "history", forgotten[0])
				require.EqualValues(t, 0, code, "%s", errs)
				require.Contains(t, out, scrubToken, "killed before the rewrite, the entry is as it was")
			default:
				require.NoError(t, jerr, "until done, the journal holds the plan")
			}

			code, out, errs = run("--root", root, "scrub", "--json")
			require.EqualValues(t, 0, code, "rerun after a kill at %s: %s", step, errs)
			var rep scrub.Report
			require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s", out)
			require.Equal(t, step != "done", rep.Resumed, "resumed")
			requireGone(t, root, scrubToken)
			code, out, errs = run("--root", root, "verify")
			require.EqualValues(t, 0, code, "verify after the rerun: %s %s", out, errs)
			code, out, errs = run("--root", root, "replay", "--verify")
			require.EqualValues(t, 0, code, "replay --verify after the rerun (killed at %s): %s %s", step, out, errs)
		})
	}
}
