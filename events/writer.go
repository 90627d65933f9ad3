package events

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// encoderLevel is the zstd level of data frames: the fastest one keeps
// 300-byte events under 100 bytes on disk at group-commit batch sizes.
const encoderLevel = zstd.SpeedFastest

var (
	encoderOnce sync.Once
	encoder     *zstd.Encoder
)

// sharedEncoder is safe for concurrent EncodeAll calls; it keeps a pool
// of per-goroutine states, so encoders are reused, not rebuilt per batch.
func sharedEncoder() *zstd.Encoder {
	encoderOnce.Do(func() {
		var err error
		encoder, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(encoderLevel),
			zstd.WithEncoderCRC(true),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
		if err != nil {
			panic(err) // only bad options fail
		}
	})
	return encoder
}

// appendReq is one Append call waiting in a stream's queue.
type appendReq struct {
	tails [][]byte // each event's line after its seq: `,"id":…}`
	first uint64   // seq of the first event, set by the writer
	seal  bool     // Log.Seal: seal the active segment (tails is empty)
	// recover: a failed stream asks its writer to reopen it from what
	// is on disk (tails is empty; see stream.recover).
	recover bool
	done    chan error
}

// stream is one stream of a Log with its writer goroutine.
type stream struct {
	log  *Log
	name string
	dir  string
	head []byte // start of every line up to the seq: `{"v":1,"stream":"name","seq":`

	sendMu  sync.RWMutex // held for reading while sending on reqs
	closed  bool
	started bool
	reqs    chan *appendReq
	done    chan struct{}

	mu       sync.Mutex // guards the committed state below
	segs     []segRef   // the last one's size is its committed size
	lastSeq  uint64
	failed   error
	failedAt time.Time // when failed was set; recovery is tried RetryAfter later
	// rollbackDue: the bytes of the failed group could not all be taken
	// back (the disk refused that too); recovery tries again first.
	rollbackDue  bool
	rollbackSnap writerState

	// Owned by the writer goroutine.
	wFile    File   // open active segment, nil if not open yet
	wPath    string // active segment path
	wFirst   uint64 // first seq of the active segment
	wSize    int64  // committed size of the active segment
	wEvents  uint32 // events in the active segment
	wNeedNew bool   // the next frame starts a new segment
	wCreate  bool   // the active segment is not created on disk yet
	wNext    uint64 // next seq to assign
	wHash    [32]byte
	out      []byte // bytes to write to the active segment
	content  []byte // uncompressed lines of the frame being built
	frame    []byte
}

func (l *Log) newStream(name string) *stream {
	return &stream{log: l, name: name, dir: filepath.Join(l.dir, name), head: lineHead(name), wNeedNew: true, wNext: 1}
}

func (s *stream) initWriter(rec recovered) {
	s.wNext, s.wHash = rec.next, rec.last
	s.wNeedNew = true
	if n := len(rec.segs); n > 0 && !rec.segs[n-1].sealed {
		last := rec.segs[n-1]
		s.wNeedNew = false
		s.wPath, s.wFirst, s.wSize, s.wEvents = last.path, last.first, last.size, rec.events
	}
}

// LastSeq is the seq of the last durable event.
func (s *stream) LastSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastSeq
}

func (s *stream) snapshot() ([]segRef, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]segRef(nil), s.segs...), s.lastSeq
}

// writerFor returns the stream, creating it and starting its writer.
func (l *Log) writerFor(name string) (*stream, error) {
	if l.readOnly {
		return nil, ErrReadOnly
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if err := l.refuseQuarantinedLocked(name); err != nil {
		return nil, err
	}
	s := l.streams[name]
	if s == nil {
		s = l.newStream(name)
		l.streams[name] = s
	}
	if !s.started {
		s.started = true
		s.reqs = make(chan *appendReq, 1024)
		s.done = make(chan struct{})
		go s.run()
	}
	return s, nil
}

// Append writes evs to the end of stream and returns them stamped with
// Stream, Seq (contiguous, in order) and V, after the frames holding them
// were fsynced. Concurrent Appends to one stream are committed together
// (group commit). If ctx ends first, Append returns ctx.Err() and the
// events may or may not be written. After a write or sync error every
// Append to the stream fails with an error wrapping ErrStreamFailed and
// the cause until the stream reopens itself (Options.RetryAfter after the
// failure, at the next append) or the log is reopened; the events of a
// failed call are not in the log.
func (l *Log) Append(ctx context.Context, stream string, evs []Envelope) ([]Envelope, error) {
	p, err := l.Enqueue(ctx, stream, evs)
	if err != nil || p == nil {
		return nil, err
	}
	return p.Wait(ctx)
}

// Pending is an append whose place in its stream is fixed — it is queued
// behind every Enqueue that returned before it — but whose commit may
// still be in flight. Wait returns it stamped once it is durable.
type Pending struct {
	req *appendReq
	out []Envelope
	err error
	got bool
}

// Enqueue is the first half of Append: it marshals evs and queues them
// on the stream's writer, then returns without waiting for the fsync.
// Callers that must fix the order of their appends under a lock of
// their own (the engine's intake) enqueue under it and Wait after
// releasing it, so concurrent single-event calls share one fsync. A nil
// *Pending with a nil error means evs was empty.
func (l *Log) Enqueue(ctx context.Context, stream string, evs []Envelope) (*Pending, error) {
	if !ValidStream(stream) {
		return nil, fmt.Errorf("append to stream %q: invalid stream name (want 1-128 of [A-Za-z0-9._-], not starting with '.')", stream)
	}
	if len(evs) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]Envelope, len(evs))
	req := &appendReq{tails: make([][]byte, len(evs)), done: make(chan error, 1)}
	head := lineHead(stream)
	for i, e := range evs {
		if e.V != 0 && e.V != CurrentVersion {
			return nil, fmt.Errorf("append to stream %s: event %d has version %d; this build writes version %d", stream, i, e.V, CurrentVersion)
		}
		e.V, e.Stream, e.Seq = CurrentVersion, stream, 0
		tail, err := marshalTail(&e, head)
		if err != nil {
			return nil, fmt.Errorf("append to stream %s: event %d (%s): %w", stream, i, e.ID, err)
		}
		if len(tail)+len(stream)+64 > maxEventSize {
			return nil, fmt.Errorf("append to stream %s: event %d (%s) is %d bytes; the limit is %d", stream, i, e.ID, len(tail), maxEventSize)
		}
		out[i], req.tails[i] = e, tail
	}
	s, err := l.writerFor(stream)
	if err != nil {
		return nil, err
	}
	if err := s.retryFailed(ctx); err != nil {
		return nil, err
	}
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return nil, ErrClosed
	}
	select {
	case s.reqs <- req:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return nil, ctx.Err()
	}
	return &Pending{req: req, out: out}, nil
}

// Seal seals the active segment of stream, behind every append queued
// before it, so that Log.Rewrite may rewrite it: the next append starts
// a new segment. A stream whose last segment is sealed, or that has
// none, is left as it is. It returns once the seal is fsynced.
func (l *Log) Seal(ctx context.Context, stream string) error {
	if !ValidStream(stream) {
		return fmt.Errorf("seal stream %q: invalid stream name", stream)
	}
	s, err := l.writerFor(stream)
	if err != nil {
		return err
	}
	if err := s.retryFailed(ctx); err != nil {
		return err
	}
	if err := s.do(ctx, &appendReq{seal: true, done: make(chan error, 1)}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("seal stream %s: %w", stream, err)
	} else if err != nil {
		return err
	}
	return nil
}

// do queues a request that carries no events (a seal, a recover) and
// waits for the writer's answer.
func (s *stream) do(ctx context.Context, req *appendReq) error {
	s.sendMu.RLock()
	if s.closed {
		s.sendMu.RUnlock()
		return ErrClosed
	}
	select {
	case s.reqs <- req:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Events returns the queued events, without their seqs until Wait has
// returned.
func (p *Pending) Events() []Envelope { return p.out }

// Wait blocks until the queued events are fsynced (or their commit
// failed) and returns them stamped with their seqs. If ctx ends first it
// returns ctx.Err(); the events may or may not be written, and a later
// Wait still learns which.
func (p *Pending) Wait(ctx context.Context) ([]Envelope, error) {
	if !p.got {
		select {
		case p.err = <-p.req.done:
			p.got = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.err == nil {
			for i := range p.out {
				p.out[i].Seq = p.req.first + uint64(i)
			}
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.out, nil
}

// The costly part of marshalling runs in the appending goroutine; the
// writer, which assigns seqs, only splices the seq into the line. The
// line is Marshal's own output, so it stays equal to Marshal byte for
// byte whatever fields Envelope gains after Seq.

// lineHead is the start of every line of stream up to its seq.
func lineHead(stream string) []byte {
	h := []byte(`{"v":`)
	h = strconv.AppendInt(h, CurrentVersion, 10)
	h = append(h, `,"stream":`...)
	q, _ := json.Marshal(stream) // a string always marshals
	h = append(h, q...)
	return append(h, `,"seq":`...)
}

// marshalTail marshals e, whose Seq is 0, and returns its line after the
// seq. head is lineHead(e.Stream).
func marshalTail(e *Envelope, head []byte) ([]byte, error) {
	line, err := marshalJSON(e)
	if err != nil {
		return nil, err
	}
	if len(line) <= len(head) || !bytes.Equal(line[:len(head)], head) || line[len(head)] != '0' {
		// Only a change of Envelope's leading fields can get here.
		return nil, fmt.Errorf("envelope line %.60q does not start with %s0", line, head)
	}
	return line[len(head)+1:], nil
}

// appendLine appends head + seq + tail + "\n".
func (s *stream) appendLine(dst []byte, seq uint64, tail []byte) []byte {
	dst = append(dst, s.head...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, tail...)
	return append(dst, '\n')
}

// run is the stream's writer goroutine: it takes every queued request,
// commits them together, and answers each after the fsync.
func (s *stream) run() {
	defer close(s.done)
	maxGroup := 16 * s.log.opts.MaxBatch
	var group []*appendReq
	// A stream idle for idleClose closes its segment file; the next
	// write opens it again. So a root with thousands of workspaces holds
	// no descriptor for the streams nobody writes to, while a busy stream
	// does not reopen its file for every batch.
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	defer idle.Stop()
	for {
		var req *appendReq
		var ok bool
		select {
		case req, ok = <-s.reqs:
		case <-idle.C:
			if s.wFile != nil {
				s.wFile.Close()
				s.wFile = nil
			}
			continue
		}
		if !ok {
			break
		}
		group = append(group[:0], req)
		n := len(req.tails)
	drain:
		for n < maxGroup {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				group = append(group, r)
				n += len(r.tails)
			default:
				break drain
			}
		}
		// A recover request is answered on its own, after the requests
		// queued before it.
		start := 0
		for i, r := range group {
			if r.recover {
				s.answer(group[start:i])
				r.done <- s.recover()
				start = i + 1
			}
		}
		s.answer(group[start:])
		clear(group)
		if s.wFile != nil {
			idle.Reset(idleClose)
		}
	}
	if s.wFile != nil {
		s.wFile.Close()
		s.wFile = nil
	}
}

// idleClose is how long a stream's writer keeps its segment file open
// with nothing to write.
const idleClose = time.Second

// answer commits group and tells each of its callers the outcome.
func (s *stream) answer(group []*appendReq) {
	if len(group) == 0 {
		return
	}
	err := s.commit(group)
	for _, r := range group {
		r.done <- err
	}
}

// commit writes the events of group as frames of at most MaxBatch
// events, rolling segments as they fill, and fsyncs. If any write or
// sync fails, nothing of the group is kept: none of it was acknowledged,
// so the bytes it wrote are taken back (rollback) and every caller of
// the group is told the events are not in the log; the stream then
// refuses appends until recover reopens it.
func (s *stream) commit(group []*appendReq) error {
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if failed != nil {
		return failed
	}
	snap := s.writerSnapshot()
	err := s.commitGroup(group)
	if err == nil {
		return nil
	}
	rbErr := s.rollback(snap)
	return s.fail(err, rbErr, snap)
}

// commitGroup does the work of commit.
func (s *stream) commitGroup(group []*appendReq) error {
	maxBatch := s.log.opts.MaxBatch
	s.out = s.out[:0]
	s.content = s.content[:0]
	var count uint32
	frameFirst := s.wNext
	for _, r := range group {
		r.first = s.wNext
		if r.seal {
			// Everything queued before the seal goes into the segment
			// it seals; everything after, into a new one.
			if count > 0 {
				if err := s.addFrame(frameFirst, count); err != nil {
					return err
				}
				count, frameFirst = 0, s.wNext
			}
			if err := s.sealActive(); err != nil {
				return err
			}
			continue
		}
		for _, tail := range r.tails {
			if count > 0 && len(s.content)+len(tail)+64 > maxFrameBytes {
				if err := s.addFrame(frameFirst, count); err != nil {
					return err
				}
				count, frameFirst = 0, s.wNext
			}
			s.content = s.appendLine(s.content, s.wNext, tail)
			s.wNext++
			count++
			if int(count) == maxBatch {
				if err := s.addFrame(frameFirst, count); err != nil {
					return err
				}
				count, frameFirst = 0, s.wNext
			}
		}
	}
	if count > 0 {
		if err := s.addFrame(frameFirst, count); err != nil {
			return err
		}
	}
	if len(s.out) > 0 {
		if err := s.flush(false); err != nil {
			return err
		}
	}
	return nil
}

// sealActive writes what s.out holds and a seal record to the active
// segment, fsyncs, and leaves the next frame to start a new segment. A
// stream without an active segment (none yet, or the last one sealed)
// is left as it is.
func (s *stream) sealActive() error {
	if s.wNeedNew {
		if len(s.out) > 0 {
			return s.flush(false)
		}
		return nil
	}
	s.out = appendSeal(s.out, Seal{FirstSeq: s.wFirst, Count: s.wEvents, Last: s.wHash})
	return s.flush(true)
}

// addFrame compresses s.content into a batch of the active segment
// (starting a new segment if needed), and seals the segment when it has
// reached the size limit.
func (s *stream) addFrame(first uint64, count uint32) error {
	enc := sharedEncoder()
	if s.wNeedNew {
		s.wNeedNew, s.wCreate = false, true
		s.wPath = filepath.Join(s.dir, SegmentName(first))
		s.wFirst, s.wSize, s.wEvents = first, 0, 0
		s.out = enc.EncodeAll(encodeStreamHeader(s.name, first, s.wHash), s.out)
	}
	s.frame = enc.EncodeAll(s.content, s.frame[:0])
	s.content = s.content[:0]
	h := BatchHeader{FirstSeq: first, Count: count, Length: uint32(len(s.frame)), Checksum: sha256.Sum256(s.frame), Prev: s.wHash}
	s.out = appendRecord(s.out, h, kindBatch)
	s.out = append(s.out, s.frame...)
	s.wHash = h.Hash()
	s.wEvents += count
	if s.wSize+int64(len(s.out)) >= s.log.opts.SegmentSize {
		s.out = appendSeal(s.out, Seal{FirstSeq: s.wFirst, Count: s.wEvents, Last: s.wHash})
		return s.flush(true)
	}
	return nil
}

// flush writes s.out to the active segment and fsyncs it (and, for a new
// segment, its directory), then publishes the new committed state.
func (s *stream) flush(seal bool) error {
	if s.wCreate {
		if err := s.createDir(); err != nil {
			return err
		}
		f, err := s.log.fs.OpenFile(s.wPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("create segment %s: %w", s.wPath, err)
		}
		s.wFile = f
	} else if s.wFile == nil {
		f, err := s.log.fs.OpenFile(s.wPath, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("open segment %s: %w", s.wPath, err)
		}
		s.wFile = f
	}
	if _, err := s.wFile.Write(s.out); err != nil {
		return fmt.Errorf("write segment %s: %w", s.wPath, err)
	}
	if err := s.wFile.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.wPath, err)
	}
	if s.wCreate {
		if err := syncDir(s.log.fs, s.dir); err != nil {
			return fmt.Errorf("sync %s: %w", s.dir, err)
		}
	}
	s.wSize += int64(len(s.out))
	s.out = s.out[:0]

	s.mu.Lock()
	if s.wCreate {
		s.segs = append(s.segs, segRef{first: s.wFirst, path: s.wPath})
	}
	last := &s.segs[len(s.segs)-1]
	last.size, last.sealed = s.wSize, seal
	s.lastSeq = s.wNext - 1
	s.mu.Unlock()
	s.wCreate = false

	if seal {
		s.wNeedNew = true
		err := s.wFile.Close()
		s.wFile = nil
		if err != nil {
			return fmt.Errorf("close segment %s: %w", s.wPath, err)
		}
	}
	return nil
}

// createDir makes the stream directory durable before its first segment.
func (s *stream) createDir() error {
	if _, err := s.log.fs.Stat(s.dir); err == nil {
		return nil
	}
	if err := s.log.fs.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("create stream directory %s: %w", s.dir, err)
	}
	if err := syncDir(s.log.fs, s.log.dir); err != nil {
		return fmt.Errorf("sync %s: %w", s.log.dir, err)
	}
	return nil
}

// Close stops accepting appends, commits what is queued, and closes the
// segments. It returns the first sticky stream error, if any.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	streams := make([]*stream, 0, len(l.streams))
	for _, s := range l.streams {
		streams = append(streams, s)
	}
	l.mu.Unlock()
	for _, s := range streams {
		s.sendMu.Lock()
		s.closed = true
		if s.started {
			close(s.reqs)
		}
		s.sendMu.Unlock()
	}
	var first error
	for _, s := range streams {
		if s.started {
			<-s.done
		}
		s.mu.Lock()
		if s.failed != nil && first == nil {
			first = s.failed
		}
		s.mu.Unlock()
	}
	return first
}
