package observer_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// The purge crash test runs this test binary as a child that purges a
// scope and, at the step named by DSHMEM_PURGE_STEP, prints "ready" and
// waits to be killed.
const purgeChildEnv = "DSHMEM_PURGE_CHILD"

func purgeChild(root string) {
	step, key := os.Getenv("DSHMEM_PURGE_STEP"), os.Getenv("DSHMEM_PURGE_KEY")
	ctx := context.Background()
	eng, err := observer.Open(ctx, root, observer.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	observer.SetPurgeHook(func(s string) {
		if s == step {
			fmt.Println("ready")
			select {} // until SIGKILL
		}
	})
	_, err = eng.PurgeScope(ctx, key, key)
	fmt.Fprintln(os.Stderr, "child: the purge ended without reaching step", step, err)
	os.Exit(4)
}

// TestPurgeKill9 kills a purging process with SIGKILL at each step of
// the purge and checks that the next open finishes it (or, killed before
// the stream left the log, that nothing of the scope was lost): no byte
// of the scope on disk, one scope/purge record, the other scopes
// untouched, replay --verify clean.
func TestPurgeKill9(t *testing.T) {
	for _, step := range []string{"drop", "dropped", "rows", "compacted"} {
		t.Run(step, func(t *testing.T) {
			ctx := context.Background()
			f := newScopeFixture(t)
			aBefore, err := f.eng.Entries(ctx, observer.EntryFilter{Scopes: []string{f.ka}})
			require.NoError(t, err)
			require.NoError(t, f.eng.Close())

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), purgeChildEnv+"="+f.root, "DSHMEM_PURGE_STEP="+step, "DSHMEM_PURGE_KEY="+f.kb)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "child: %s", stderr.String())
			require.Equal(t, "ready\n", line)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.True(t, ok && ws.Signaled(), "child exited by itself: %s", stderr.String())

			eng := openEngine(t, f.root)
			records, err := eng.Store().Events(ctx, sqlstore.EventFilter{Stream: observer.GlobalStream, Type: events.TypeScopePurge})
			require.NoError(t, err)
			_, statErr := os.Stat(filepath.Join(f.root, observer.PurgingDir))
			assert.ErrorIs(t, statErr, os.ErrNotExist, "purging/ is left after the open")
			if step == "drop" {
				// Killed before the stream left the log: the scope is whole.
				assert.Empty(t, records)
				info, err := eng.ScopeInfo(ctx, f.kb)
				require.NoError(t, err)
				assert.Equal(t, 1, info.Entries["active"])
				verifyReplay(t, eng)
				return
			}
			require.Len(t, records, 1, "scope/purge records after the reopen")
			require.NoError(t, eng.Store().CheckpointAll(ctx))
			assert.Empty(t, onDisk(t, f.root, f.tokB), "bytes of the purged scope on disk after the reopen")
			_, err = eng.ScopeKey(f.kb)
			assert.ErrorIs(t, err, observer.ErrUnknownScope)
			aAfter, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{f.ka}})
			require.NoError(t, err)
			assert.Equal(t, aBefore, aAfter, "the other scope's entries")
			_, err = os.Stat(filepath.Join(f.root, projector.SummaryPath(f.ka)))
			assert.NoError(t, err, "the other scope's summary")
			verifyReplay(t, eng)
		})
	}
}
