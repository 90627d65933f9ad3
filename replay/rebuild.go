package replay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"dshmem/events"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/vectors"
)

// Log is the part of the event log replay reads. *events.Log satisfies it.
type Log interface {
	projector.Source
	// LastSeq is the seq of the stream's last event (0 if none).
	LastSeq(stream string) uint64
}

// IndexFile is the name of the index inside a root, declared once in
// sqlstore.
const IndexFile = sqlstore.IndexFile

// rebuildCacheKiB is the SQLite page cache of a rebuild, in KiB.
const rebuildCacheKiB = 64 << 10

// Options configure Rebuild and Verify. The zero value works.
type Options struct {
	// ChunkSize is the number of events per fold; 0 means the projector's default.
	ChunkSize int
	// Progress, when set, is called after each fold with the stream, the
	// seq reached in it, and the events folded so far out of the total.
	Progress func(stream string, seq uint64, done, total uint64)
	// Vectors, when set (the sentence encoder is installed), gives the
	// rebuilt index its vectors (vectors.Fill) with VectorWorkers
	// encoders (0: 1). Without it the index has none, as a root without
	// the model; a server fills them in the background.
	Vectors       *vectors.Model
	VectorWorkers int
}

// Stats describe a rebuild.
type Stats struct {
	Events  uint64
	Streams int
	Files   int // projection files written
	Vectors int // texts given a vector (Options.Vectors)
	Elapsed time.Duration
}

// Rebuild folds every event of log into a new index at dir/index.db and
// writes every projection under dir, exactly as the live projector does.
// dir is created if needed and must hold nothing yet.
func Rebuild(ctx context.Context, log Log, dir string, opts Options) (Stats, error) {
	start := time.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Stats{}, fmt.Errorf("create %s: %w", dir, err)
	}
	if ents, err := os.ReadDir(dir); err != nil {
		return Stats{}, fmt.Errorf("read %s: %w", dir, err)
	} else if len(ents) > 0 {
		return Stats{}, fmt.Errorf("%w: %s holds %s; give a new or empty directory", ErrNotEmpty, dir, ents[0].Name())
	}
	st, err := sqlstore.Open(filepath.Join(dir, IndexFile))
	if err != nil {
		return Stats{}, err
	}
	defer st.Close()
	// One connection, so the pragma below reaches every statement, with
	// a smaller page cache than a live index keeps (128 MiB): a rebuild
	// writes mostly appends, and this keeps its peak RSS under 300 MB.
	if err := st.UseOneConnection(ctx, rebuildCacheKiB); err != nil {
		return Stats{}, fmt.Errorf("rebuild: %w", err)
	}
	p := projector.New(st)
	p.Root = dir
	p.ChunkSize = opts.ChunkSize
	if l, ok := log.(interface {
		Lost(stream string, first, last uint64) bool
	}); ok {
		p.Lost = l.Lost // a salvaged stream's lost seqs are stepped over
	}
	var stats Stats
	var total uint64
	streams := log.Streams()
	for _, s := range streams {
		total += log.LastSeq(s)
	}
	stats.Streams = len(streams)
	var done uint64
	last := map[string]uint64{}
	progress := func(stream string, seq uint64) {
		done += seq - last[stream]
		last[stream] = seq
		if opts.Progress != nil {
			opts.Progress(stream, seq, done, total)
		}
	}
	chunk := opts.ChunkSize
	if chunk <= 0 {
		chunk = projector.DefaultChunkSize
	}
	// The new index is thrown away if the rebuild fails, so it is loaded
	// without a rollback journal on disk or syncs (bulkLoad), and put
	// back in the live index's WAL mode at the end.
	if err := bulkLoad(ctx, st, true); err != nil {
		return stats, err
	}
	for _, stream := range streams {
		if err := foldStream(ctx, p, log, stream, chunk, progress); err != nil {
			return stats, fmt.Errorf("rebuild from log: %w", err)
		}
	}
	if err := bulkLoad(ctx, st, false); err != nil {
		return stats, err
	}
	if err := p.Refresh(ctx); err != nil {
		return stats, fmt.Errorf("rebuild from log: %w", err)
	}
	if opts.Vectors != nil {
		vr, err := vectors.Fill(ctx, st, opts.Vectors, vectors.FillOptions{Workers: opts.VectorWorkers})
		if err != nil {
			return stats, fmt.Errorf("rebuild vectors: %w", err)
		}
		stats.Vectors = vr.Encoded
	}
	stats.Events = done
	files, err := ProjectionFiles(dir)
	if err != nil {
		return stats, err
	}
	stats.Files = len(files)
	stats.Elapsed = time.Since(start)
	return stats, nil
}

// chunkBuf is one chunk of events and the bytes their Data point into.
type chunkBuf struct {
	evs  []events.Envelope
	data []byte
}

// foldStream folds one stream of log from seq 1, chunk events per
// transaction, like projector.CatchUp, but reads and decodes the next
// chunk on a second goroutine while the current one is folded: decoding
// is a tenth of a rebuild's CPU and would otherwise sit on the path of
// the SQLite writes. Two chunk buffers are reused in turn (Fold keeps
// nothing of its events once it returns).
func foldStream(ctx context.Context, p *projector.Projector, log Log, stream string, chunk int, progress func(string, uint64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	full := make(chan *chunkBuf, 1)
	free := make(chan *chunkBuf, 2)
	free <- &chunkBuf{}
	free <- &chunkBuf{}
	scanErr := make(chan error, 1)
	go func() {
		defer close(full)
		var cur *chunkBuf
		take := func() error {
			select {
			case cur = <-free:
				cur.evs, cur.data = cur.evs[:0], cur.data[:0]
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		send := func() error {
			// Data may point into the reader's buffer: copy it into the
			// chunk's own, then point each event at its copy.
			off := 0
			for i := range cur.evs {
				n := len(cur.evs[i].Data)
				cur.evs[i].Data = cur.data[off : off+n : off+n]
				off += n
			}
			select {
			case full <- cur:
				cur = nil
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := take(); err != nil {
			scanErr <- err
			return
		}
		err := log.Scan(stream, 1, func(ev events.Envelope) error {
			if ev.Stream != stream {
				return fmt.Errorf("event %q at seq %d says stream %q", ev.ID, ev.Seq, ev.Stream)
			}
			cur.data = append(cur.data, ev.Data...)
			cur.evs = append(cur.evs, ev)
			if len(cur.evs) < chunk {
				return nil
			}
			if err := send(); err != nil {
				return err
			}
			return take()
		})
		if err == nil && cur != nil && len(cur.evs) > 0 {
			err = send()
		}
		scanErr <- err
	}()
	for c := range full {
		if err := p.Fold(ctx, c.evs); err != nil {
			cancel()
			for range full {
			}
			<-scanErr
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		progress(stream, c.evs[len(c.evs)-1].Seq)
		free <- c
	}
	if err := <-scanErr; err != nil {
		return fmt.Errorf("read stream %s: %w", stream, err)
	}
	return nil
}

// ProjectionFiles lists the projection files under root ('/'-separated,
// sorted): every file projector.ParsePath accepts. The log, the index,
// .damaged copies and anything else are left out.
func ProjectionFiles(root string) ([]string, error) {
	var out []string
	for _, dir := range []string{".", projector.KnowledgeDir, projector.SessionsDir, projector.ScopesDir, projector.ArchivedDir} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if dir == "." && rel != "." {
					return fs.SkipDir // the top level only; the others are walked on their own
				}
				return nil
			}
			if _, ok := projector.ParsePath(rel); ok && d.Type().IsRegular() {
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list projection files in %s: %w", root, err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// compile-time check that the log satisfies Log.
var _ Log = (*events.Log)(nil)

// bulkLoad switches a rebuild's new index between bulk loading (an
// in-memory journal, no syncs: a crash loses only a directory the
// rebuild would discard anyway) and the live settings sqlstore.Open
// uses (WAL, synchronous NORMAL). WAL mode is recorded in the database
// file, so it must be put back before the index is handed over.
func bulkLoad(ctx context.Context, st *sqlstore.Store, on bool) error {
	if err := st.BulkLoad(ctx, on); err != nil {
		return fmt.Errorf("rebuild: set up the new index: %w", err)
	}
	return nil
}
