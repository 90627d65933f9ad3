package events

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// lossyFS models what a power cut does to what was not fsynced: it
// records, per file, the size that was synced and what was written
// after, and, per directory, the entries created since its last sync.
// At the cut (crash) it freezes — every later write and sync fails, as
// the machine is gone — and then rewrites the disk as it might come
// back: each file keeps its synced bytes and any prefix of the unsynced
// ones (drawn from rng: none, some or all, as the page cache happened to
// flush them); a file whose directory entry was never synced may be gone.
type lossyFS struct {
	OSFS
	mu     sync.Mutex
	frozen bool
	// cutAt: the power goes at the cutAt-th write or sync (counted
	// together), after a write has written (its bytes not synced) or
	// before a sync has synced; cut is closed then, and rng decides what
	// the disk keeps.
	cutAt    int
	ops      int
	rng      *rand.Rand
	cut      chan struct{}
	dropped  int64
	vanished int
	synced   map[string]int64           // file → size at its last sync
	size     map[string]int64           // file → size now
	pending  map[string]map[string]bool // dir → entries created since its last sync
}

var errPowerCut = errors.New("power cut")

func newLossyFS(cutAt int, rng *rand.Rand) *lossyFS {
	return &lossyFS{synced: map[string]int64{}, size: map[string]int64{}, pending: map[string]map[string]bool{},
		cutAt: cutAt, rng: rng, cut: make(chan struct{})}
}

// tickLocked counts one write or sync and cuts the power at cutAt.
func (l *lossyFS) tickLocked() {
	l.ops++
	if l.ops == l.cutAt {
		l.crashLocked()
		close(l.cut)
	}
}

func (l *lossyFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen {
		return nil, errPowerCut
	}
	_, statErr := os.Stat(name)
	f, err := l.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 && errors.Is(statErr, os.ErrNotExist) {
		dir := filepath.Dir(name)
		if l.pending[dir] == nil {
			l.pending[dir] = map[string]bool{}
		}
		l.pending[dir][name] = true
		l.synced[name], l.size[name] = 0, 0
	} else if _, ok := l.size[name]; !ok {
		if fi, err := f.Stat(); err == nil && !fi.IsDir() {
			l.synced[name], l.size[name] = fi.Size(), fi.Size()
		}
	}
	return &lossyFile{File: f, fs: l, name: name}, nil
}

func (l *lossyFS) Rename(oldpath, newpath string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen {
		return errPowerCut
	}
	return os.Rename(oldpath, newpath) // the log's appends never rename
}

func (l *lossyFS) Remove(name string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen {
		return errPowerCut
	}
	return os.Remove(name)
}

func (l *lossyFS) MkdirAll(path string, perm os.FileMode) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozen {
		return errPowerCut
	}
	return os.MkdirAll(path, perm)
}

type lossyFile struct {
	File
	fs   *lossyFS
	name string
}

func (f *lossyFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.frozen {
		return 0, errPowerCut
	}
	n, err := f.File.Write(p)
	f.fs.size[f.name] += int64(n)
	f.fs.tickLocked()
	if f.fs.frozen {
		return n, errPowerCut
	}
	return n, err
}

func (f *lossyFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.frozen {
		return errPowerCut
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.fs.size[f.name] = size
	f.fs.synced[f.name] = min(f.fs.synced[f.name], size)
	return nil
}

func (f *lossyFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.frozen {
		return errPowerCut
	}
	if f.fs.tickLocked(); f.fs.frozen {
		return errPowerCut // the power went before this sync
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	if fi, err := f.File.Stat(); err == nil && fi.IsDir() {
		delete(f.fs.pending, f.name) // its entries are durable now
		return nil
	}
	f.fs.synced[f.name] = f.fs.size[f.name]
	return nil
}

// crashLocked freezes the file system and leaves the disk as a power
// cut might, counting the unsynced bytes dropped and the files gone.
func (l *lossyFS) crashLocked() {
	rng := l.rng
	l.frozen = true
	for dir, names := range l.pending {
		for name := range names {
			if rng.IntN(2) == 0 {
				os.Remove(name) // its directory entry never reached the disk
				delete(l.size, name)
				l.vanished++
			}
		}
		_ = dir
	}
	for name, size := range l.size {
		keep := l.synced[name]
		if extra := size - keep; extra > 0 {
			switch rng.IntN(3) {
			case 0: // nothing unsynced survived
			case 1:
				keep += rng.Int64N(extra + 1)
			default:
				keep = size
			}
		}
		if keep < size {
			os.Truncate(name, keep)
			l.dropped += size - keep
		}
	}
}

// TestPowerLoss cuts the power at the N-th write or sync of a
// concurrent workload (N drawn from the seed), many times: writes since
// the last fsync are dropped or partly kept, files whose directory was
// not synced may vanish. After each cut the log opens (repairing a torn
// tail), every acknowledged event is there exactly once, and Verify is
// clean.
func TestPowerLoss(t *testing.T) {
	const runs = 60
	var dropped int64
	var vanished, repaired, lost int
	defer func() {
		t.Logf("%d cuts: %d unsynced bytes dropped, %d files gone with their directory entry, %d torn tails repaired, %d durable events not acknowledged (kept)", runs, dropped, vanished, repaired, lost)
		require.Positive(t, dropped, "no cut dropped anything: the test proves nothing")
		require.Positive(t, repaired, "no cut left a torn tail")
	}()
	for run := range runs {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(run), 3))
			dir := t.TempDir()
			fsys := newLossyFS(4+rng.IntN(80), rng)
			l, err := OpenLog(dir, Options{FS: fsys, SegmentSize: 2048, MaxBatch: 4})
			require.NoError(t, err)
			streams := []string{"global", "ws-00000000000000000001", "ws-00000000000000000002"}
			var mu sync.Mutex
			acked := map[string][]Envelope{}
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := streams[w%len(streams)]
					for i := 0; ; i++ {
						got, err := l.Append(context.Background(), s, testEvents(w*100000+i*3, 1+i%3))
						if err != nil {
							return // the power is gone
						}
						mu.Lock()
						acked[s] = append(acked[s], got...)
						mu.Unlock()
					}
				}()
			}
			<-fsys.cut // the workload runs until the power goes
			wg.Wait()
			l.Close() // fails: the power is gone; nothing it does reaches the disk
			dropped, vanished = dropped+fsys.dropped, vanished+fsys.vanished

			l2, err := OpenLog(dir, Options{})
			require.NoError(t, err, "run %d: open after the cut", run)
			defer l2.Close()
			repaired += len(l2.Repairs())
			for _, s := range streams {
				got := scanAll(t, l2, s, 1) // seqs contiguous from 1, or it fails
				seen := map[string]int{}
				for _, e := range got {
					seen[e.ID]++
				}
				for _, e := range acked[s] {
					require.Equal(t, 1, seen[e.ID], "run %d, %s: acknowledged event %s (seq %d) is in the log %d times", run, s, e.ID, e.Seq, seen[e.ID])
				}
				for id, n := range seen {
					require.Equal(t, 1, n, "run %d, %s: event %s is in the log %d times", run, s, id, n)
				}
				lost += len(got) - len(acked[s])
			}
			require.NoError(t, l2.Close())
			p, err := Verify(dir)
			require.NoError(t, err)
			require.Empty(t, p, "run %d: Verify after the cut", run)
		})
	}
}
