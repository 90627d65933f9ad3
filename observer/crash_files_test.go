package observer_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/projector"
	"dshmem/replay"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filesChildEnv names the root of a child writer whose Markdown files
// are held (Options.FilesInterval < 0): it remembers, prints "ack N"
// after each acknowledgement, then "ready", and waits to be killed —
// so the kill lands after the acknowledgements and before any file of
// theirs was written.
const filesChildEnv = "DSHMEM_FILES_CHILD"

const filesChildEntries = 30

func filesChild(root string) {
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{FilesInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	for i := 0; i < filesChildEntries; i++ {
		imp := i % 4
		r := observer.RememberRequest{Cwd: "/home/u/crash-files", Content: fmt.Sprintf("fact %d: the build uses cache %d", i, i), Type: "fact", Importance: &imp}
		if i%5 == 0 {
			r.Cwd, r.Type = "", "preference" // global.md too
		}
		if _, err := eng.Remember(ctx, r); err != nil {
			fmt.Fprintln(os.Stderr, "child remember:", err)
			os.Exit(4)
		}
		fmt.Printf("ack %d\n", i)
	}
	fmt.Println("ready")
	select {} // killed here, files unwritten
}

// TestCrashBeforeFiles kills a real writer (SIGKILL) after it
// acknowledged its remembers and before it wrote their Markdown files:
// the next open writes them from the queue the folds committed, the
// files equal what the index renders, and replay --verify finds no
// difference.
func TestCrashBeforeFiles(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), filesChildEnv+"="+root)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	acks, ready := 0, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "ack ") {
			acks++
		}
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Wait()
		t.Fatalf("child never got ready (%d acks): %s", acks, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	require.Equal(t, filesChildEntries, acks, "got %d acks, want %d", acks, filesChildEntries)
	summary := filepath.Join(root, projector.SummaryPath(observer.StreamForCwd("/home/u/crash-files")))
	if _, err := os.Stat(summary); !os.IsNotExist(err) {
		t.Fatalf("the summary exists before the repair (%v): the kill did not land before the files", err)
	}

	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	queued, err := eng.Store().QueuedFiles(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, 0, queued, "open left %d groups of files queued", queued)
	for _, rel := range []string{projector.GlobalFile, projector.IndexFile, projector.SummaryPath(observer.StreamForCwd("/home/u/crash-files"))} {
		r, ok, err := eng.Projector().Render(ctx, rel)
		require.NoError(t, err, "render %s: %v %v", rel, ok, err)
		require.True(t, ok, "render %s: %v %v", rel, ok, err)
		disk, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		assert.False(t, err != nil || string(disk) != string(r.Data), "%s after the repair: %v; differs from what the index renders", rel, err)
	}
	verifyReplay(t, eng)
}

// verifyReplay runs replay --verify on an open engine's root.
func verifyReplay(t *testing.T, eng *observer.Engine) {
	t.Helper()
	// Files are written in the background after a fold: bring them up to
	// the index first, or the comparison races the writer.
	require.NoError(t, eng.WriteFiles(context.Background()))
	rep, err := replay.Verify(context.Background(), eng.Log(), eng.Root(), eng.Store(), replay.VerifyOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Differences, 0, "replay --verify: %d files compared, differences %+v", rep.Files, rep.Differences)
	require.NotEqualValues(t, 0, rep.Files, "replay --verify: %d files compared, differences %+v", rep.Files, rep.Differences)
}

// TestCoalescedFilesEndAtNewest: a burst of 1,000 concurrent remembers
// with the files written in the background, coalesced: once the queue
// is empty, every file equals a rebuild from the log (the newest state
// won), and summary_history/ holds the last 10 versions.
func TestCoalescedFilesEndAtNewest(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	const n, callers = 1000, 8
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += callers {
				imp := i % 4
				r := observer.RememberRequest{Cwd: "/home/u/burst", Content: fmt.Sprintf("burst fact %d", i), Type: "fact", Importance: &imp}
				if i%50 == 0 {
					r.Cwd, r.Type = "", "rule"
				}
				if _, err := eng.Remember(ctx, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Wait for the background writer to drain the queue (a state, not a
	// time): nothing here writes the files but it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		q, err := eng.Projector().Queued(ctx)
		require.NoError(t, err)
		if !q {
			break
		}
		require.False(t, time.Now().After(deadline), "the file writer never drained the queue")
	}
	require.NoError(t, eng.FilesError())
	hist, _ := filepath.Glob(filepath.Join(root, projector.ScopesDir, observer.StreamForCwd("/home/u/burst"), projector.HistoryDir, "*.md"))
	assert.Len(t, hist, projector.HistoryKeep, "got %d summary versions, want %d", len(hist), projector.HistoryKeep)
	verifyReplay(t, eng)
}
