package events

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdFS fails the first write to a segment, but only once the test lets
// it: the write says it has started on writing and waits for release.
// Every later write succeeds (a disk that was full for a moment).
type holdFS struct {
	OSFS
	writing, release chan struct{}
}

func (h *holdFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := h.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, ".jsonl.zst") {
		return f, err
	}
	return &holdFile{File: f, fs: h}, nil
}

type holdFile struct {
	File
	fs *holdFS
}

func (f *holdFile) Write(p []byte) (int, error) {
	select {
	case <-f.fs.writing: // already failed once
		return f.File.Write(p)
	default:
	}
	close(f.fs.writing)
	<-f.fs.release
	return 0, ErrInjected
}

// TestQueuedAppendsFailWithTheStream: an append queued while the
// stream's write was failing — it passed the check at Enqueue before the
// failure — is refused by the writer too, with the stream's error, even
// though the disk would take its bytes now. Without the writer's own
// check of the failed state (commit) it would be written on top of a
// stream that is meant to refuse everything until it has reopened from
// disk.
func TestQueuedAppendsFailWithTheStream(t *testing.T) {
	h := &holdFS{writing: make(chan struct{}), release: make(chan struct{})}
	l := openLog(t, t.TempDir(), Options{FS: h, RetryAfter: time.Hour})
	defer l.Close()
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, "global", testEvents(0, 1))
		first <- err
	}()
	<-h.writing // the writer is in the first batch's write
	p, err := l.Enqueue(ctx, "global", testEvents(1, 1))
	require.NoError(t, err, "enqueue before the failure")
	close(h.release)
	require.ErrorIs(t, <-first, ErrInjected)
	_, err = p.Wait(ctx)
	require.ErrorIs(t, err, ErrStreamFailed, "an append queued before the failure, committed after it")
	require.ErrorIs(t, err, ErrInjected, "the refusal names the cause")
	require.Zero(t, l.LastSeq("global"), "nothing is in the log")
	_, err = l.Append(ctx, "global", testEvents(2, 1))
	require.ErrorIs(t, err, ErrStreamFailed, "an append after the failure, before RetryAfter")
}
