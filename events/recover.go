package events

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// A stream whose write or sync fails (a full disk, no file descriptor
// left, an I/O error) takes back what the failed group wrote, refuses
// appends for Options.RetryAfter with an error that says what failed,
// and then, at the next append, reopens itself from what is on disk:
// the tail is verified against what was committed before the stream is
// used again. A server therefore recovers once the cause is gone,
// without a restart.

// writerState is what commit restores when a group fails: the writer's
// fields and the committed state as they were before the group.
type writerState struct {
	wPath             string
	wFirst            uint64
	wSize             int64
	wEvents           uint32
	wNeedNew, wCreate bool
	wNext             uint64
	wHash             [32]byte
	segs              int // len(segs)
	lastSize          int64
	lastSealed        bool
	lastSeq           uint64
}

func (s *stream) writerSnapshot() writerState {
	st := writerState{wPath: s.wPath, wFirst: s.wFirst, wSize: s.wSize, wEvents: s.wEvents,
		wNeedNew: s.wNeedNew, wCreate: s.wCreate, wNext: s.wNext, wHash: s.wHash}
	s.mu.Lock()
	st.segs, st.lastSeq = len(s.segs), s.lastSeq
	if n := len(s.segs); n > 0 {
		st.lastSize, st.lastSealed = s.segs[n-1].size, s.segs[n-1].sealed
	}
	s.mu.Unlock()
	return st
}

// rollback takes back what a failed group wrote: segments it created are
// removed, the segment that was active before it is cut back to its
// committed size (which removes a seal the group wrote), and the writer
// and the committed state are as they were. None of it was
// acknowledged. It returns the first step that failed; the state is
// restored either way, and recover repeats the steps on disk.
func (s *stream) rollback(snap writerState) error {
	if s.wFile != nil {
		s.wFile.Close()
		s.wFile = nil
	}
	s.mu.Lock()
	var created []string
	for _, seg := range s.segs[min(snap.segs, len(s.segs)):] {
		created = append(created, seg.path)
	}
	s.segs = s.segs[:min(snap.segs, len(s.segs))]
	if n := len(s.segs); n > 0 {
		s.segs[n-1].size, s.segs[n-1].sealed = snap.lastSize, snap.lastSealed
	}
	s.lastSeq = snap.lastSeq
	s.mu.Unlock()
	if s.wCreate && s.wPath != "" && s.wPath != snap.wPath {
		created = append(created, s.wPath) // being created when the fault came
	}
	var first error
	for _, p := range created {
		if err := s.log.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = fmt.Errorf("remove %s: %w", p, err)
		}
	}
	if !snap.wNeedNew && !snap.wCreate && snap.wPath != "" {
		if err := truncateFile(s.log.fs, snap.wPath, snap.wSize); err != nil && first == nil {
			first = err
		}
	}
	s.wPath, s.wFirst, s.wSize, s.wEvents = snap.wPath, snap.wFirst, snap.wSize, snap.wEvents
	s.wNeedNew, s.wCreate, s.wNext, s.wHash = snap.wNeedNew, snap.wCreate, snap.wNext, snap.wHash
	s.out, s.content = s.out[:0], s.content[:0]
	return first
}

// truncateFile cuts a file to size and makes the cut durable.
func truncateFile(fsys FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s to cut it back: %w", path, err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("cut %s back to %d bytes: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

// fail makes err sticky for the stream, with what to do in its text.
func (s *stream) fail(err, rbErr error, snap writerState) error {
	why := fmt.Sprintf("nothing of the failed batch was kept; appends to this stream are refused until the cause is gone "+
		"(free disk space, raise the file limit), and the stream reopens itself from disk at the first append after %s", s.log.opts.RetryAfter)
	if rbErr != nil {
		why = fmt.Sprintf("taking the failed batch back failed too (%v); the stream retries that at the first append after %s", rbErr, s.log.opts.RetryAfter)
	}
	err = fmt.Errorf("append to stream %s: %w: %w (%s)", s.name, ErrStreamFailed, err, why)
	s.mu.Lock()
	s.failed, s.failedAt = err, time.Now()
	s.rollbackDue, s.rollbackSnap = rbErr != nil, snap
	s.mu.Unlock()
	return err
}

// recover runs in the writer: it repeats a rollback that did not finish,
// then reads the stream's segments from disk (checking their headers and
// hash chain, the batches after the committed ones whole), cuts off bytes
// after the last whole batch (never acknowledged), and checks that the
// disk ends where the committed state does. Then the stream takes
// appends again. If any step fails the stream stays failed, with the new
// cause, and the next try is RetryAfter later.
func (s *stream) recover() error {
	s.mu.Lock()
	failed, due, snap, lastSeq := s.failed, s.rollbackDue, s.rollbackSnap, s.lastSeq
	s.mu.Unlock()
	if failed == nil {
		return nil
	}
	retry := func(err error) error {
		err = fmt.Errorf("append to stream %s: %w: reopening it from disk failed: %w (it retries at the first append after %s)", s.name, ErrStreamFailed, err, s.log.opts.RetryAfter)
		s.mu.Lock()
		s.failed, s.failedAt = err, time.Now()
		s.mu.Unlock()
		return err
	}
	if due {
		if err := s.rollback(snap); err != nil {
			return retry(err)
		}
		s.mu.Lock()
		s.rollbackDue = false
		s.mu.Unlock()
	}
	rec, err := recoverStream(s.log.fs, s.log.dir, s.name, lastSeq, recoverRead)
	if err != nil {
		return retry(err)
	}
	for _, tt := range rec.torn {
		if tt.Offset == 0 {
			if err := s.log.fs.Remove(tt.Segment); err != nil && !errors.Is(err, os.ErrNotExist) {
				return retry(err)
			}
		} else if err := truncateFile(s.log.fs, tt.Segment, tt.Offset); err != nil {
			return retry(err)
		}
	}
	if rec.next != lastSeq+1 || rec.next > 1 && rec.last != s.wHash {
		return retry(fmt.Errorf("the stream on disk ends at seq %d, but seq %d was committed: reopen the log (restart) to find out why", rec.next-1, lastSeq))
	}
	s.initWriter(rec)
	s.mu.Lock()
	s.segs, s.failed = rec.segs, nil
	s.mu.Unlock()
	return nil
}

// retryFailed is what Enqueue and Seal do with a failed stream: refuse
// until RetryAfter has passed since the failure, then ask the writer to
// recover and go on if it did.
func (s *stream) retryFailed(ctx context.Context) error {
	s.mu.Lock()
	failed, at := s.failed, s.failedAt
	s.mu.Unlock()
	if failed == nil {
		return nil
	}
	if time.Since(at) < s.log.opts.RetryAfter {
		return failed
	}
	return s.do(ctx, &appendReq{recover: true, done: make(chan error, 1)})
}

// Degraded is a stream that refuses appends, and why.
type Degraded struct {
	Stream string    `json:"stream"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// Degraded lists the streams whose last write or sync failed and that
// have not reopened since, sorted by name.
func (l *Log) Degraded() []Degraded {
	l.mu.Lock()
	streams := make([]*stream, 0, len(l.streams))
	for _, s := range l.streams {
		streams = append(streams, s)
	}
	l.mu.Unlock()
	var out []Degraded
	for _, s := range streams {
		s.mu.Lock()
		if s.failed != nil {
			out = append(out, Degraded{Stream: s.name, Reason: s.failed.Error(), Since: s.failedAt})
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Degraded) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}
