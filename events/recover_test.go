package events

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamRecoversAfterTransientFault: after one failed write or sync
// (a disk full for a moment), the stream refuses appends with an error
// that says what failed and what to do, reports itself in Degraded, and
// once RetryAfter has passed reopens itself from disk and takes appends
// again — no restart. Exactly the acknowledged events are in the log.
func TestStreamRecoversAfterTransientFault(t *testing.T) {
	counter := &FaultFS{}
	l := openLog(t, t.TempDir(), Options{SegmentSize: faultOpts.SegmentSize, MaxBatch: faultOpts.MaxBatch, FS: counter})
	_, err := faultWorkload(t, l)
	require.NoError(t, err)
	l.Close()
	writes, syncs := counter.Counts()

	run := func(t *testing.T, ffs *FaultFS) {
		t.Parallel() // each on a directory of its own; most of the time is RetryAfter
		cause := ffs.Err
		if cause == nil {
			cause = ErrInjected
		}
		dir := t.TempDir()
		opts := faultOpts
		opts.FS, opts.RetryAfter = ffs, 300*time.Millisecond
		l, err := OpenLog(dir, opts)
		require.NoError(t, err)
		defer l.Close()
		acked, err := faultWorkload(t, l)
		require.ErrorIs(t, err, ErrStreamFailed)
		require.ErrorIs(t, err, cause)
		require.Contains(t, err.Error(), "nothing of the failed batch was kept")
		require.Contains(t, err.Error(), "free disk space")
		// Refused while the cause may still be there.
		_, err = l.Append(context.Background(), "global", testEvents(500, 1))
		require.ErrorIs(t, err, ErrStreamFailed, "an append right after the fault")
		deg := l.Degraded()
		require.Len(t, deg, 1)
		assert.Equal(t, "global", deg[0].Stream)
		assert.Contains(t, deg[0].Reason, cause.Error())
		// Then it reopens itself and goes on where the acknowledged
		// events end.
		var got []Envelope
		require.Eventually(t, func() bool {
			got, err = l.Append(context.Background(), "global", testEvents(len(acked), 3))
			return err == nil
		}, 20*time.Second, 20*time.Millisecond, "the stream never recovered: %v", err)
		require.Equal(t, uint64(len(acked)+1), got[0].Seq)
		acked = append(acked, got...)
		assert.Empty(t, l.Degraded(), "the stream is still reported degraded after it recovered")
		more, err := l.Append(context.Background(), "global", testEvents(len(acked), 4))
		require.NoError(t, err)
		acked = append(acked, more...)
		require.NoError(t, l.Close())

		p, err := Verify(dir)
		require.NoError(t, err)
		require.Empty(t, p, "Verify after the recovery")
		l2 := openLog(t, dir, faultOpts)
		defer l2.Close()
		require.Empty(t, l2.Repairs())
		all := scanAll(t, l2, "global", 1)
		require.Len(t, all, len(acked), "exactly the acknowledged events are in the log")
		checkEvents(t, all, acked)
	}
	// Each fault as an injected error, and as the two a disk really
	// gives: EIO, and ENOSPC (a full disk; the torn write is a short
	// write: half the bytes, then the error).
	for _, cause := range []struct {
		name string
		err  error
	}{{"", nil}, {"EIO", syscall.EIO}, {"ENOSPC", syscall.ENOSPC}} {
		for n := 1; n <= writes; n++ {
			t.Run(fmt.Sprintf("%sWrite%d", cause.name, n), func(t *testing.T) { run(t, &FaultFS{FailWrite: n, Transient: true, Err: cause.err}) })
			t.Run(fmt.Sprintf("%sTornWrite%d", cause.name, n), func(t *testing.T) {
				run(t, &FaultFS{FailWrite: n, Transient: true, Partial: true, Err: cause.err})
			})
		}
		for n := 1; n <= syncs; n++ {
			t.Run(fmt.Sprintf("%sSync%d", cause.name, n), func(t *testing.T) { run(t, &FaultFS{FailSync: n, Transient: true, Err: cause.err}) })
		}
	}
}

// slowSyncFS makes every fsync take a while, as a real disk's does, so
// concurrent appenders queue behind it.
type slowSyncFS struct{ OSFS }

func (slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := OSFS{}.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return slowSyncFile{f}, nil
}

type slowSyncFile struct{ File }

func (f slowSyncFile) Sync() error {
	time.Sleep(2 * time.Millisecond)
	return f.File.Sync()
}

// TestGroupCommitSharesFsyncs: 16 appenders at once share fsyncs — far
// fewer syncs than appends — and every append is acknowledged once.
func TestGroupCommitSharesFsyncs(t *testing.T) {
	counter := &FaultFS{FS: slowSyncFS{}}
	l := openLog(t, t.TempDir(), Options{FS: counter})
	defer l.Close()
	const appenders, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, appenders*each)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := l.Append(context.Background(), "global", testEvents(a*1000+i, 1)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	_, syncs := counter.Counts()
	assert.Equal(t, uint64(appenders*each), l.LastSeq("global"))
	assert.LessOrEqual(t, syncs, appenders*each/2, "%d fsyncs for %d appends: the appends did not share them", syncs, appenders*each)
	t.Logf("%d appends, %d fsyncs", appenders*each, syncs)
}

// TestIdleStreamsHoldNoFile: a root with many streams written once holds
// no file descriptor for them once their writes are done.
func TestIdleStreamsHoldNoFile(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd here")
		}
		return len(ents)
	}
	l := openLog(t, t.TempDir(), Options{})
	defer l.Close()
	before := fds()
	for i := range 200 {
		_, err := l.Append(context.Background(), fmt.Sprintf("ws-%020d", i), testEvents(0, 1))
		require.NoError(t, err)
	}
	// Each writer closes its file a second after its last write: wait
	// for them to get there.
	require.Eventually(t, func() bool { return fds() < before+20 }, 10*time.Second, 10*time.Millisecond,
		"%d descriptors open after writing 200 streams, %d before", fds(), before)
	// And they still take appends (the file is opened again).
	_, err := l.Append(context.Background(), "ws-00000000000000000007", testEvents(1, 1))
	require.NoError(t, err)
	require.Equal(t, uint64(2), l.LastSeq("ws-00000000000000000007"))
}

// TestFailedBrokenCopyLeavesNothing: when the copy of a torn segment
// cannot be written (a full disk), the open fails, and no empty or
// partial .broken file is left behind — however often it is tried.
func TestFailedBrokenCopyLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Options{})
	_, err := l.Append(context.Background(), "global", testEvents(0, 3))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	segs, err := os.ReadDir(filepath.Join(dir, "global"))
	require.NoError(t, err)
	seg := filepath.Join(dir, "global", segs[0].Name())
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0x5d, 0x2a, 0x4d, 0x18, 1, 2, 3}) // a torn record
	require.NoError(t, err)
	require.NoError(t, f.Close())
	for range 3 {
		_, err := OpenLog(dir, Options{FS: &FaultFS{FailWrite: 1}})
		require.ErrorIs(t, err, ErrInjected)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "global"))
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".broken", "a failed copy left %s", e.Name())
	}
	// With the disk back, the open repairs the tail.
	l2, err := OpenLog(dir, Options{})
	require.NoError(t, err)
	defer l2.Close()
	assert.Len(t, l2.Repairs(), 1)
	assert.Equal(t, uint64(3), l2.LastSeq("global"))
}
