package events

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Options configure a Log. The zero value works.
type Options struct {
	SegmentSize int64 // roll threshold in bytes; 0 → 64 MiB
	MaxBatch    int   // max events per frame (batch); 0 → 1024
	FS          FS    // fault seam; nil → the OS file system
	// Trusted gives, per stream, a seq up to which every event is known
	// to be durable (the index folded it, and folds come after the
	// fsync): open checks those batches by their headers and hash chain
	// only, without reading their data frames. A crash can tear only
	// what came after the last fsync, so the torn-tail check loses
	// nothing; damage to older bytes is for Verify to find.
	Trusted map[string]uint64
	// RetryAfter is how long a stream whose write or sync failed refuses
	// appends before it tries to reopen itself from what is on disk
	// (0 → 2s; see stream.recover).
	RetryAfter time.Duration
}

func (o Options) withDefaults() Options {
	if o.SegmentSize <= 0 {
		o.SegmentSize = 64 << 20
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 2 * time.Second
	}
	return o
}

// Repaired describes one torn tail cut off by OpenLog or Repair.
type Repaired struct {
	Segment string // path of the segment
	Offset  int64  // length the segment was truncated to (0: the segment was removed)
	Dropped int64  // bytes cut off
	Broken  string // path of the copy of the original segment
}

// TornTail is a torn tail that OpenLogReadOnly found and left as it is:
// the log reads the segment up to Offset, the end of its last whole
// batch. Beside a live writer it is most likely a batch being written;
// with no writer, the mark of a crash that the next OpenLog (or Repair)
// cuts off.
type TornTail struct {
	Segment string // path of the segment
	Offset  int64  // end of the last whole batch (0: not even the stream header is whole)
	Bytes   int64  // bytes after Offset, not read
}

func (t TornTail) String() string {
	return fmt.Sprintf("%s ends in %d bytes of an incomplete batch after offset %d", t.Segment, t.Bytes, t.Offset)
}

// LogStats summarizes a log.
type LogStats struct {
	Streams  int
	Events   uint64
	Segments int
	Bytes    int64 // committed bytes of all segments
}

// Log is a directory of streams, each a sequence of segments. It is safe
// for concurrent use. Only one Log may write a directory at a time; any
// number opened with OpenLogReadOnly may read it beside that one.
type Log struct {
	dir  string
	opts Options
	fs   FS

	// readOnly: opened by OpenLogReadOnly; Append fails with ErrReadOnly.
	readOnly bool

	// rewriteMu lets one Rewrite run at a time.
	rewriteMu sync.Mutex

	mu      sync.Mutex
	streams map[string]*stream
	closed  bool
	repairs []Repaired
	torn    []TornTail // read-only: torn tails left in place
	// quarantined: damaged streams, read-only until salvaged (quarantine.go).
	quarantined map[string]Damage
	gaps        map[string][]SeqRange // Lost's cache
}

// OpenLog opens (creating if needed) the log in dir. A sealed segment is
// trusted by its seal record (checked against its header and the segment
// before it); the last segment of each stream is walked, checking each
// frame's checksum (past Options.Trusted), the seqs and the hash chain
// (JSON is not decoded). It cuts off torn tails (keeping a .broken copy)
// and quarantines a stream with damage it met (quarantine.go). Verify reads every
// byte of every segment.
func OpenLog(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	l := &Log{dir: dir, opts: opts, fs: opts.FS, streams: map[string]*stream{}}
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	names, err := listStreams(l.fs, dir)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	for _, name := range names {
		if err := removeRewriteTemps(l.fs, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("open log %s: stream %s: %w", dir, name, err)
		}
		rec, err := recoverStream(l.fs, dir, name, opts.Trusted[name], recoverOpen)
		l.repairs = append(l.repairs, rec.repairs...)
		damage, err := quarantineAtOpen(l.fs, dir, name, rec, err)
		if err != nil {
			return nil, fmt.Errorf("open log %s: stream %s: %w", dir, name, err)
		}
		s := l.newStream(name)
		s.segs = rec.segs
		s.lastSeq = rec.next - 1
		s.initWriter(rec)
		l.streams[name] = s
		if damage != nil {
			if err := l.Quarantine(*damage); err != nil {
				return nil, fmt.Errorf("open log %s: %w", dir, err)
			}
		}
	}
	return l, nil
}

// quarantineAtOpen decides what the recovery of stream found: nil for a
// sound stream; the damage for a stream with corruption or with a
// quarantine marker (the stream then opens, read-only, up to the seq
// before the damage: rec holds that state); an error for anything else
// (an I/O error).
func quarantineAtOpen(fsys FS, dir, name string, rec recovered, err error) (*Damage, error) {
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return nil, err
	}
	marked, ok, merr := readQuarantine(fsys, filepath.Join(dir, name))
	if merr != nil {
		return nil, merr
	}
	if ok && (err == nil || marked.Segment != "") {
		// The first damage recorded stays; what is served is this open's.
		marked.Stream, marked.Serves = name, rec.next-1
		return &marked, nil
	}
	if err != nil {
		d := damageOf(name, err, rec.next-1)
		return &d, nil
	}
	return nil, nil
}

// OpenLogReadOnly opens the log in dir for reading only, beside the
// process that writes it or with none. It takes no lock, creates nothing
// (a missing dir is an empty log) and repairs nothing: a torn tail is
// left on disk, reported by TornTails, and the stream is read up to its
// last whole batch. It finds the end of each stream as OpenLog does — a
// sealed segment is trusted by its seal record, the last one is walked,
// by batch headers up to Options.Trusted and by frame checksums past
// it — and quarantines a stream with damage it meets. The full checksum
// walk of every byte is Verify's.
//
// The log is a snapshot: it holds what was in the files when it was
// opened (each segment up to the size it had then) and never sees
// later appends. Append and Enqueue fail with ErrReadOnly; of the
// Options only Trusted and FS matter.
func OpenLogReadOnly(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	l := &Log{dir: dir, opts: opts, fs: opts.FS, streams: map[string]*stream{}, readOnly: true}
	names, err := listStreams(l.fs, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open log %s read-only: %w", dir, err)
	}
	for _, name := range names {
		rec, err := recoverStream(l.fs, dir, name, opts.Trusted[name], recoverRead)
		if errors.Is(err, fs.ErrNotExist) {
			// Only a stream directory being created or removed can vanish
			// between the listing and its walk.
			continue
		}
		damage, err := quarantineAtOpen(l.fs, dir, name, rec, err)
		if err != nil {
			return nil, fmt.Errorf("open log %s read-only: stream %s: %w", dir, name, err)
		}
		l.torn = append(l.torn, rec.torn...)
		s := l.newStream(name)
		s.segs = rec.segs
		s.lastSeq = rec.next - 1
		l.streams[name] = s
		if damage != nil {
			l.Quarantine(*damage) // read-only: in memory only, never fails
		}
	}
	return l, nil
}

// listStreams returns the stream directories of a log directory, sorted.
func listStreams(fsys FS, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && ValidStream(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// recovered is the state of a stream after recovery.
type recovered struct {
	segs    []segRef // sealed flags set; the last one's size is its committed size
	next    uint64   // next seq to assign
	last    [32]byte // hash of the last batch
	events  uint32   // events in the last (active) segment, if unsealed
	repairs []Repaired
	torn    []TornTail // recoverRead: torn tails left in place
}

// recoverMode says how recoverStream walks a stream and what it does
// with a torn tail.
type recoverMode int

const (
	// recoverOpen (OpenLog) trusts sealed segments by their seals and
	// cuts a torn tail off.
	recoverOpen recoverMode = iota
	// recoverRepair (Repair) walks every segment whole, so a stream with
	// corruption anywhere is left as it is, and cuts a torn tail off.
	recoverRepair
	// recoverRead (OpenLogReadOnly) trusts sealed segments like
	// recoverOpen and leaves a torn tail on disk: the stream ends at its
	// last whole batch.
	recoverRead
)

// recoverStream finds the end of a stream. A sealed segment before the
// last is trusted by its seal (trustSealed); one whose seal does not fit
// is walked, and the walk reports why. The last segment is walked,
// checking frame checksums (of batches past trusted), seq order and the
// hash chain without decoding JSON; its torn tail is cut off, or with
// recoverRead only noted. Corruption met is returned, never repaired.
func recoverStream(fsys FS, dir, name string, trusted uint64, mode recoverMode) (recovered, error) {
	var rec recovered
	sdir := filepath.Join(dir, name)
	segs, err := listSegments(fsys, sdir)
	if err != nil {
		return rec, err
	}
	state := segState{next: 1, torn: -1}
	for i := 0; i < len(segs); i++ {
		seg := segs[i]
		prev := state.last
		if i < len(segs)-1 && mode != recoverRepair {
			if st, ok := trustSealed(fsys, seg, name, state.next, prev); ok {
				segs[i].sealed, segs[i].size = true, st.size
				state = st
				continue
			}
			// Not the last one: sealed by the invariant, so read as a
			// sealed segment (its own size), and the walk says if not.
			seg.sealed = true
		}
		st, err := walkSegment(fsys, seg, walkOpts{
			stream: name, skipBelow: ^uint64(0), expNext: state.next, expPrev: &prev,
			trustThrough: trusted,
			report:       func(ce *CorruptError) error { return ce },
		})
		if err == nil && i < len(segs)-1 {
			if ce := notLastProblem(seg, st); ce != nil {
				err = ce
			}
		}
		if ce := (*CorruptError)(nil); errors.As(err, &ce) {
			// Damage: the stream is read up to the last whole batch
			// before it (OpenLog quarantines it) and nothing is cut.
			rec.segs, rec.next, rec.last = segs[:i], state.next, state.last
			if st.events > 0 {
				segs[i].sealed = true // never appended to
				rec.segs, rec.next, rec.last = segs[:i+1], st.next, st.last
			}
			return rec, err
		}
		if err != nil {
			return rec, err
		}
		if i < len(segs)-1 {
			segs[i].size = st.size
		}
		if st.torn >= 0 {
			if mode == recoverRead {
				rec.torn = append(rec.torn, TornTail{Segment: seg.path, Offset: st.torn, Bytes: seg.size - st.torn})
			} else {
				r, err := cutTornTail(fsys, seg, st.torn)
				if err != nil {
					return rec, err
				}
				rec.repairs = append(rec.repairs, r)
			}
			if st.torn == 0 {
				// Not even the stream header was whole: the segment is gone.
				segs = segs[:i]
				continue
			}
			segs[i].size = st.torn
		}
		segs[i].sealed = st.sealed
		state = st
	}
	rec.segs, rec.next, rec.last = segs, state.next, state.last
	if n := len(segs); n > 0 && !segs[n-1].sealed {
		rec.events = uint32(state.next - segs[n-1].first)
	}
	return rec, nil
}

// cutTornTail copies a segment to a .broken file, then truncates it to
// off (removing it when off is 0: nothing of it was whole), with fsyncs
// so that the cut is durable before anything is appended after it.
func cutTornTail(fsys FS, seg segRef, off int64) (Repaired, error) {
	r := Repaired{Segment: seg.path, Offset: off, Dropped: seg.size - off}
	dir := filepath.Dir(seg.path)
	if seg.size > 0 {
		broken, err := saveBroken(fsys, seg.path)
		if err != nil {
			return r, err
		}
		r.Broken = broken
	}
	if off == 0 {
		if err := fsys.Remove(seg.path); err != nil {
			return r, fmt.Errorf("remove torn segment %s: %w", seg.path, err)
		}
	} else {
		f, err := fsys.OpenFile(seg.path, os.O_RDWR, 0)
		if err != nil {
			return r, fmt.Errorf("truncate segment %s: %w", seg.path, err)
		}
		err = f.Truncate(off)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return r, fmt.Errorf("truncate segment %s: %w", seg.path, err)
		}
	}
	if err := syncDir(fsys, dir); err != nil {
		return r, fmt.Errorf("sync %s: %w", dir, err)
	}
	return r, nil
}

// saveBroken copies path to path.broken (or path.broken.N if that exists)
// and fsyncs the copy.
func saveBroken(fsys FS, path string) (string, error) {
	src, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return "", fmt.Errorf("copy torn segment %s: %w", path, err)
	}
	defer src.Close()
	for i := 1; ; i++ {
		dst := path + brokenSuffix
		if i > 1 {
			dst = fmt.Sprintf("%s%s.%d", path, brokenSuffix, i)
		}
		out, err := fsys.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("copy torn segment %s: %w", path, err)
		}
		_, err = io.Copy(out, src)
		if err == nil {
			err = out.Sync()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// A copy that failed (a full disk) is not left behind as an
			// empty or partial .broken file for every later open to add
			// to: the torn segment itself is still whole on disk.
			fsys.Remove(dst)
			return "", fmt.Errorf("copy torn segment %s to %s: %w", path, dst, err)
		}
		return dst, nil
	}
}

// Repairs returns the torn tails OpenLog cut off.
func (l *Log) Repairs() []Repaired {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Repaired(nil), l.repairs...)
}

// TornTails returns the torn tails OpenLogReadOnly found and left in
// place (none for a log opened with OpenLog, which cuts them off).
func (l *Log) TornTails() []TornTail {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]TornTail(nil), l.torn...)
}

// ReadOnly reports whether the log was opened with OpenLogReadOnly.
func (l *Log) ReadOnly() bool { return l.readOnly }

// Dir is the directory of the log.
func (l *Log) Dir() string { return l.dir }

// Streams returns the names of the streams that hold events, sorted.
func (l *Log) Streams() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	for name, s := range l.streams {
		if s.LastSeq() > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// LastSeq is the seq of the last durable event of the stream (0 if none).
func (l *Log) LastSeq(stream string) uint64 {
	l.mu.Lock()
	s := l.streams[stream]
	l.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.LastSeq()
}

// Stats counts the streams, events, segments and committed bytes.
func (l *Log) Stats() (LogStats, error) {
	l.mu.Lock()
	streams := make([]*stream, 0, len(l.streams))
	for _, s := range l.streams {
		streams = append(streams, s)
	}
	l.mu.Unlock()
	var st LogStats
	for _, s := range streams {
		segs, last := s.snapshot()
		if last == 0 {
			continue
		}
		st.Streams++
		st.Events += last
		st.Segments += len(segs)
		for _, seg := range segs {
			st.Bytes += seg.size
		}
	}
	return st, nil
}

// Scan calls fn for every durable event of the stream with Seq ≥ fromSeq,
// in order, as of the moment Scan starts. Segments wholly below fromSeq
// are skipped by their names and batches below it are not decoded. An
// error from fn stops the scan and is returned as is; damage is returned
// as a *CorruptError.
func (l *Log) Scan(stream string, fromSeq uint64, fn func(Envelope) error) error {
	return l.scan(stream, fromSeq, nil, fn)
}

// ScanFiltered is Scan for readers that want few of a stream's events:
// only lines for which keep returns true are decoded and passed to fn.
// keep sees each raw JSON line (checksums already verified) and must not
// retain it. Decoding is most of a scan's cost, so a cheap byte test
// (bytes.Contains on a type name) makes a sparse read several times
// faster.
func (l *Log) ScanFiltered(stream string, fromSeq uint64, keep func(line []byte) bool, fn func(Envelope) error) error {
	return l.scan(stream, fromSeq, keep, fn)
}

func (l *Log) scan(stream string, fromSeq uint64, keep func([]byte) bool, fn func(Envelope) error) error {
	l.mu.Lock()
	s := l.streams[stream]
	l.mu.Unlock()
	if s == nil {
		return nil
	}
	segs, lastSeq := s.snapshot()
	if fromSeq == 0 {
		fromSeq = 1
	}
	if fromSeq > lastSeq || len(segs) == 0 {
		return nil
	}
	start := sort.Search(len(segs), func(i int) bool { return segs[i].first > fromSeq }) - 1
	if start < 0 {
		start = 0
	}
	var (
		expNext uint64
		expPrev *[32]byte
		stop    = errors.New("stop")
		fnErr   error
	)
	if start == 0 {
		var zero [32]byte
		expNext, expPrev = 1, &zero
	}
	for i := start; i < len(segs); i++ {
		seg := segs[i]
		st, err := walkSegment(l.fs, seg, walkOpts{
			stream: stream, decode: keep == nil, skipBelow: fromSeq,
			expNext: expNext, expPrev: expPrev,
			report: func(ce *CorruptError) error { return ce },
			onBatch: func(b Batch) error {
				if keep != nil {
					return scanLines(b, fromSeq, lastSeq, keep, fn, stop, &fnErr)
				}
				for _, e := range b.Events {
					if e.Seq < fromSeq {
						continue
					}
					if e.Seq > lastSeq {
						return stop
					}
					if err := fn(e); err != nil {
						fnErr = err
						return stop
					}
				}
				return nil
			},
		})
		if err == stop {
			return fnErr
		}
		if ce := (*CorruptError)(nil); errors.As(err, &ce) && st.next > lastSeq {
			// A quarantined stream: what it serves ends before the damage.
			return nil
		}
		if err != nil {
			return fmt.Errorf("scan stream %s: %w", stream, err)
		}
		if st.torn >= 0 {
			return fmt.Errorf("scan stream %s: %w", stream, &CorruptError{Segment: seg.path, Offset: st.torn, Err: ErrTornTail})
		}
		if i < len(segs)-1 {
			if ce := notLastProblem(seg, st); ce != nil {
				return fmt.Errorf("scan stream %s: %w", stream, ce)
			}
		}
		if st.next > lastSeq {
			return nil
		}
		expNext, expPrev = st.next, &st.last
	}
	return fmt.Errorf("scan stream %s: %w: log ends at seq %d, but seq %d was acknowledged", stream, ErrChain, expNext-1, lastSeq)
}

// scanLines is the onBatch of a filtered scan: it decodes only the kept
// lines of a raw batch. The seq of line i is the batch's first seq + i
// (the writer's invariant, checked by the walk).
func scanLines(b Batch, fromSeq, lastSeq uint64, keep func([]byte) bool, fn func(Envelope) error, stop error, fnErr *error) error {
	for i, line := range b.Lines {
		seq := b.Header.FirstSeq + uint64(i)
		if seq < fromSeq {
			continue
		}
		if seq > lastSeq {
			return stop
		}
		if !keep(line) {
			continue
		}
		e, err := Unmarshal(line)
		if err != nil {
			return fmt.Errorf("decode seq %d: %w", seq, err)
		}
		if err := fn(e); err != nil {
			*fnErr = err
			return stop
		}
	}
	return nil
}
