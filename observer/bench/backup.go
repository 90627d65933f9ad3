package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"dshmem/observer"
	"dshmem/observer/backup"
	"dshmem/sqlstore"
)

// BackupBenchOptions configure BenchBackup. The zero value works.
type BackupBenchOptions struct {
	Records  int    // episodic records of the root; 0 → 1,000,000
	CacheDir string // where the built root is kept; "" → os.UserCacheDir()/dshmem
	// Restore also times restore-backup of the first backup into a new
	// root (it folds nothing: the snapshot reflects the whole log).
	Restore  bool
	Progress func(phase string, done, total int)
}

// BackupBenchRun is one timed backup.
type BackupBenchRun struct {
	Name        string        `json:"name"`
	Took        time.Duration `json:"tookNs"`
	Copied      int           `json:"copied"`
	CopiedBytes int64         `json:"copiedBytes"`
	Unchanged   bool          `json:"unchanged"`
}

// BackupBenchResult is what BenchBackup measured.
type BackupBenchResult struct {
	Records    int              `json:"records"`
	Events     uint64           `json:"events"` // in the root's log
	Root       string           `json:"root"`
	Built      bool             `json:"built"`
	BuildTime  time.Duration    `json:"buildNs"`
	LogBytes   int64            `json:"logBytes"`
	IndexBytes int64            `json:"indexBytes"`
	Runs       []BackupBenchRun `json:"runs"`
	Verify     time.Duration    `json:"verifyNs"`
	Restore    time.Duration    `json:"restoreNs,omitempty"`
}

// benchBackupFormat names the layout of a cached backup bench root.
const benchBackupFormat = "v1"

// BenchBackup builds once (cached, the recall benchmark's synthetic
// chatter and entries) a root of o.Records records, then backs it up
// into a fresh directory three times: the first backup (everything),
// a second with nothing changed, and a third after 1,000 more events
// (a new index snapshot and the changed segments). It then verifies
// the backup, and with o.Restore restores it into a new root. Each
// backup appends its maintenance/backup event to the cached root, as a
// real one does. The backup and restored root are removed afterwards.
func BenchBackup(ctx context.Context, o BackupBenchOptions) (BackupBenchResult, error) {
	if o.Records <= 0 {
		o.Records = 1_000_000
	}
	if o.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return BackupBenchResult{}, fmt.Errorf("find cache dir: %w", err)
		}
		o.CacheDir = filepath.Join(d, "dshmem")
	}
	res := BackupBenchResult{Records: o.Records,
		Root: filepath.Join(o.CacheDir, fmt.Sprintf("bench-backup-%s-%d", benchBackupFormat, o.Records))}
	done := filepath.Join(res.Root, "complete")
	if _, err := os.Stat(done); err != nil {
		t0 := time.Now()
		if err := buildRecallRoot(ctx, res.Root, RecallBenchOptions{Records: o.Records, Progress: o.Progress}); err != nil {
			return res, err
		}
		if err := os.WriteFile(done, []byte(benchBackupFormat+"\n"), 0o600); err != nil {
			return res, fmt.Errorf("mark bench root built: %w", err)
		}
		res.Built, res.BuildTime = true, time.Since(t0)
	}
	work, err := os.MkdirTemp("", "dshmem-bench-backup-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "backup")

	eng, err := observer.Open(ctx, res.Root, observer.Options{})
	if err != nil {
		return res, err
	}
	defer eng.Close()
	st, err := eng.Log().Stats()
	if err != nil {
		return res, err
	}
	res.Events, res.LogBytes = st.Events, st.Bytes
	if fi, err := os.Stat(filepath.Join(res.Root, sqlstore.IndexFile)); err == nil {
		res.IndexBytes = fi.Size()
	}
	run := func(name string) error {
		if o.Progress != nil {
			o.Progress(name, 0, 1)
		}
		t0 := time.Now()
		rep, err := backup.Run(ctx, eng, backup.Options{To: dir})
		if err != nil {
			return fmt.Errorf("bench backup %s: %w", name, err)
		}
		res.Runs = append(res.Runs, BackupBenchRun{Name: name, Took: time.Since(t0), Copied: len(rep.Copied),
			CopiedBytes: rep.CopiedBytes, Unchanged: rep.Unchanged})
		return nil
	}
	if err := run("first"); err != nil {
		return res, err
	}
	if err := run("unchanged"); err != nil {
		return res, err
	}
	// New ids: the cached root keeps the events of earlier runs.
	syn := NewSynth(11)
	var lines [][]byte
	for i := 0; i < 1000; i++ {
		lines = append(lines, syn.Line(int(res.Events)+i, 300, 4))
	}
	if r, _, err := eng.Ingest(ctx, lines); err != nil || r.Appended != len(lines) {
		return res, fmt.Errorf("bench backup: ingest the change: %+v, %v", r, err)
	}
	if err := run("after 1,000 events"); err != nil {
		return res, err
	}
	if err := eng.Close(); err != nil {
		return res, err
	}

	t0 := time.Now()
	v, err := backup.Verify(ctx, dir)
	if err != nil {
		return res, err
	}
	if !v.OK() {
		return res, fmt.Errorf("bench backup: the backup does not verify: %v", v.Problems)
	}
	res.Verify = time.Since(t0)
	if o.Restore {
		t0 := time.Now()
		if _, err := backup.Restore(ctx, dir, filepath.Join(work, "restored")); err != nil {
			return res, err
		}
		res.Restore = time.Since(t0)
	}
	return res, nil
}
