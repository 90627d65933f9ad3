package backup_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/backup"

	"github.com/stretchr/testify/require"
)

const crashChildEnv = "DSHMEM_BACKUP_CRASH_CHILD" // root|dir|start

func TestMain(m *testing.M) {
	if v := os.Getenv(crashChildEnv); v != "" {
		crashChild(v)
		return
	}
	os.Exit(m.Run())
}

// crashChild ingests and backs up in a loop until it is killed: a
// backup is under way most of the time.
func crashChild(v string) {
	var root, dir string
	var start int
	if _, err := fmt.Sscanf(v, "%s %s %d", &root, &dir, &start); err != nil {
		fmt.Fprintln(os.Stderr, "child args:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{SegmentSize: 4 << 10}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for n := start; ; n += 40 {
		var lines [][]byte
		for i := n; i < n+40; i++ {
			lines = append(lines, []byte(fmt.Sprintf(`{"id":"k:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s%d","cwd":"/crash/ws%d","data":{"text":"line %d of the crash test, about the orders migration"}}`, i, i%3, i%3, i)))
		}
		if _, _, err := eng.Ingest(ctx, lines); err != nil {
			fmt.Fprintln(os.Stderr, "child ingest:", err)
			os.Exit(3)
		}
		if _, err := backup.Run(ctx, eng, backup.Options{To: dir}); err != nil {
			fmt.Fprintln(os.Stderr, "child backup:", err)
			os.Exit(3)
		}
		fmt.Println("backed-up")
	}
}

// TestBackupKill9 kills a process that ingests and backs up, with
// SIGKILL placed by the child's own signals — after "ready" and a number
// of "backed-up" lines drawn from the seed, so the kill lands in the
// next ingest or backup — and checks after each kill that the backup
// directory still verifies and restores into a root that equals its
// replay; at the end, that the next backup is clean.
func TestBackupKill9(t *testing.T) {
	const kills = 12
	base := t.TempDir()
	root, dir := filepath.Join(base, "r"), filepath.Join(base, "b")
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	restores, noted := 0, 0
	for k := 0; k < kills; k++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", crashChildEnv, root, dir, k*100_000))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strictBuffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(out)
		require.True(t, sc.Scan() && sc.Text() == "ready", "kill %d: the child did not get ready: %s", k, stderr.String())
		// Where the kill lands: after 0 to 2 more backups; the first kill
		// waits for one, so a backup exists to check.
		want := rng.IntN(3)
		if k == 0 {
			want = max(want, 1)
		}
		for n := 0; n < want; n++ {
			require.True(t, sc.Scan() && sc.Text() == "backed-up", "kill %d: the child stopped before backup %d: %s", k, n+1, stderr.String())
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled(), "kill %d: the child exited by itself: %s", k, stderr.String())

		if _, err := backup.ReadManifest(dir); err != nil {
			continue // killed before the first backup was committed
		}
		v, err := backup.Verify(ctx, dir)
		require.NoError(t, err)
		require.True(t, v.OK(), "kill %d: the backup left by the kill does not verify: %v", k, v.Problems)
		if len(v.Notes) > 0 {
			noted++ // killed between a copy's rename and the manifest
		}
		restored := filepath.Join(base, "restored-"+strconv.Itoa(k))
		_, err = backup.Restore(ctx, dir, restored)
		require.NoError(t, err, "kill %d: restore of the backup left by the kill", k)
		verifyReplay(t, restored)
		os.RemoveAll(restored)
		restores++
	}
	require.NotZero(t, restores, "no backup was ever committed: the child never got going")

	eng := openRoot(t, root)
	rep, err := backup.Run(ctx, eng, backup.Options{To: dir})
	require.NoError(t, err)
	require.NoError(t, eng.Close())
	v, err := backup.Verify(ctx, dir)
	require.NoError(t, err)
	require.True(t, v.OK(), "after the kills: %v", v.Problems)
	require.Empty(t, v.Notes, "the next backup records or removes what the kills left")
	t.Logf("%d kills, %d backups left by them restored (%d with copies newer than their manifest); the last backup is generation %d", kills, restores, noted, rep.Generation)
}

// strictBuffer is a bytes.Buffer safe for the child's stderr copier and
// the test reading it.
type strictBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *strictBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *strictBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
