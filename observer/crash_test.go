package observer_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/bench"
	"dshmem/observer/internal/enginetest"
	"dshmem/projector"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/require"
)

// The crash test re-runs this test binary as a child writer. The child
// ingests batches of events and prints "ack FIRST LAST" after each call
// returns, i.e. after the fsync that acknowledged them.
const crashChildEnv = "DSHMEM_CRASH_CHILD"

func TestMain(m *testing.M) {
	if root := os.Getenv(crashChildEnv); root != "" {
		crashChild(root)
		return
	}
	if root := os.Getenv(filesChildEnv); root != "" {
		filesChild(root) // crash_files_test.go
		return
	}
	if root := os.Getenv(purgeChildEnv); root != "" {
		purgeChild(root) // scopes_crash_test.go
		return
	}
	os.Exit(m.Run())
}

func crashChild(root string) {
	start, _ := strconv.Atoi(os.Getenv("DSHMEM_CRASH_START"))
	seed, _ := strconv.ParseUint(os.Getenv("DSHMEM_CRASH_SEED"), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	syn := bench.NewSynth(seed)
	for n := start; ; {
		size := 1 + rng.IntN(100)
		lines := make([][]byte, size)
		for i := range lines {
			id := n + i
			lines[i] = []byte(fmt.Sprintf(`{"id":"crash:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s%d","cwd":"/crash/ws%d","data":{"text":%q}}`,
				id, id%3, id%3, syn.Text(200)))
		}
		res, _, err := eng.Ingest(ctx, lines)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child ingest:", err)
			os.Exit(4)
		}
		// Re-sent ids (the overlap with the previous life) come back
		// as duplicates; they were acknowledged before.
		if res.Rejected != 0 {
			fmt.Fprintln(os.Stderr, "child: rejected", res.Rejected)
			os.Exit(5)
		}
		fmt.Printf("ack %d %d\n", n, n+size-1)
		n += size
	}
}

// TestCrashKill9 kills a real writer process with SIGKILL at random
// moments and checks, after each restart, that every acknowledged event
// is in the log exactly once and that the index equals a fold of the
// log; at the end, that it equals a rebuild of the whole log from
// scratch. The seed is fixed (DSHMEM_CRASH_SEED picks another); where
// the kills land still depends on the machine's timing.
func TestCrashKill9(t *testing.T) {
	const kills = 50
	root := t.TempDir()
	seed := uint64(1)
	if s := os.Getenv("DSHMEM_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("DSHMEM_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (set DSHMEM_CRASH_SEED to try another)", seed)
	// fresh is folded from the log alongside the live index: after each
	// restart it catches up with what the log gained. The log only
	// grows (a torn tail cut on open was never acknowledged, nor folded
	// here), so this equals a rebuild from scratch at a fraction of the
	// cost; the last check rebuilds from scratch all the same.
	fresh, err := sqlstore.Open(filepath.Join(t.TempDir(), "fresh.db"))
	require.NoError(t, err)
	defer fresh.Close()
	rng := rand.New(rand.NewPCG(seed, 1))
	acked := map[int]bool{}
	next := 0
	for k := 0; k < kills; k++ {
		// Re-send a few ids of the previous life: dedupe must hold.
		start := max(0, next-rng.IntN(50))
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+root,
			"DSHMEM_CRASH_START="+strconv.Itoa(start),
			"DSHMEM_CRASH_SEED="+strconv.FormatUint(seed+uint64(k), 10))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(10+rng.IntN(150)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err := cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ok, "kill %d: child exited by itself (%v): %s", k, err, stderr.String())
		require.True(t, ws.Signaled(), "kill %d: child exited by itself (%v): %s", k, err, stderr.String())
		sc := bufio.NewScanner(&stdout)
		for sc.Scan() {
			var a, b int
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &a, &b); err != nil {
				continue // a line cut by the kill
			}
			for i := a; i <= b; i++ {
				acked[i] = true
			}
			next = max(next, b+1)
		}
		checkCrashRoot(t, root, acked, k, fresh, k == kills-1)
	}
	require.NotEqualValues(t, 0, len(acked), "no event was ever acknowledged: the child never got going")
	t.Logf("%d kills, %d events acknowledged", kills, len(acked))
}

// checkCrashRoot reopens root and checks the log against acked and the
// live index against fresh caught up with the log, or, when last, against
// an index rebuilt from the whole log.
func checkCrashRoot(t *testing.T, root string, acked map[int]bool, k int, fresh *sqlstore.Store, last bool) {
	t.Helper()
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err, "kill %d: reopen", k)
	defer eng.Close()
	seen := map[int]int{}
	lg := eng.Log()
	for _, s := range lg.Streams() {
		var want uint64 = 1
		err := lg.Scan(s, 1, func(e events.Envelope) error {
			if e.Seq != want {
				return fmt.Errorf("stream %s: seq %d, want %d", s, e.Seq, want)
			}
			want++
			n, err := strconv.Atoi(strings.TrimPrefix(e.ID, "crash:"))
			if err != nil {
				return fmt.Errorf("unexpected id %q", e.ID)
			}
			seen[n]++
			return nil
		})
		require.NoError(t, err, "kill %d: scan", k)
	}
	for n, c := range seen {
		require.EqualValues(t, 1, c, "kill %d: event crash:%d is in the log %d times", k, n, c)
	}
	for n := range acked {
		require.EqualValues(t, 1, seen[n], "kill %d: acknowledged event crash:%d is missing from the log", k, n)
	}
	if last {
		live, rebuilt := enginetest.IndexDumps(t, eng)
		require.Equal(t, rebuilt, live, "kill %d: live index differs from a rebuild of the log (%d vs %d bytes of dump)", k, len(live), len(rebuilt))
		return
	}
	cursors, err := fresh.Cursors()
	require.NoError(t, err)
	for s, c := range cursors {
		require.False(t, c > lg.LastSeq(s), "kill %d: stream %s: the log ends at seq %d, but seq %d was in it after an earlier kill", k, s, lg.LastSeq(s), c)
	}
	require.NoError(t, projector.New(fresh).CatchUp(ctx, lg, nil))
	var live, folded bytes.Buffer
	require.NoError(t, projector.Dump(ctx, eng.Store(), &live))
	require.NoError(t, projector.Dump(ctx, fresh, &folded))
	require.Equal(t, folded.Bytes(), live.Bytes(), "kill %d: live index differs from a fold of the log (%d vs %d bytes of dump)", k, live.Len(), folded.Len())
}
