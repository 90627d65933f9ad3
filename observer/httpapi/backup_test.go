package httpapi

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"dshmem/observer/backup"
	"dshmem/observer/broker"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContextBackupReminder: the context's "backup due" appears only
// when a backup is due and goes after one, through /v1/context.
func TestContextBackupReminder(t *testing.T) {
	base := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 8, 20, 10, 0, 0, 0, time.UTC).UnixNano()) // two days after the events
	clock := func() time.Time { return time.Unix(0, now.Load()).UTC() }
	ts := startServer(t, filepath.Join(base, "memory"), ServerOptions{Now: clock})
	ts.must(200, "POST", "/v1/events", []any{
		event("m:1", "session/start", "top1", "/w/m", map[string]any{"origin": "top"}),
		event("m:2", "user/message", "top1", "", map[string]any{"text": "set up the project"}),
	}, nil)
	reminders := func() string {
		var sc broker.SessionContext
		ts.must(200, "GET", "/v1/context?session=top1&cwd=/w/m&origin=top", nil, &sc)
		return strings.Join(sc.Maintenance, "\n")
	}
	assert.NotContains(t, reminders(), "backup due", "memory two days old needs no backup yet")

	now.Store(time.Date(2026, 8, 26, 10, 0, 0, 0, time.UTC).UnixNano()) // eight days after
	assert.Contains(t, reminders(), "backup due: no backup recorded, and memory goes back to 2026-08-18")

	var rep backup.Report
	ts.must(200, "POST", "/v1/backup", map[string]any{}, &rep)
	assert.Equal(t, filepath.Join(base, "memory-backup"), rep.To)
	assert.NotEmpty(t, rep.Copied)
	assert.NotContains(t, reminders(), "backup due", "right after a backup")

	now.Store(time.Date(2026, 9, 2, 10, 0, 1, 0, time.UTC).UnixNano()) // seven days after the backup
	assert.Contains(t, reminders(), "backup due: the last backup was on 2026-08-26 (more than 7 days ago)")

	v, err := backup.Verify(ts.t.Context(), rep.To)
	require.NoError(t, err)
	assert.True(t, v.OK(), "got %v", v.Problems)
}

func TestBackupRouteErrors(t *testing.T) {
	ts := startServer(t, filepath.Join(t.TempDir(), "memory"), ServerOptions{})
	code, body := ts.call("POST", "/v1/backup", map[string]any{"to": "relative/dir"})
	require.Equal(t, 400, code, "%s", body)
	assert.Contains(t, string(body), "not an absolute path")
	code, body = ts.call("POST", "/v1/backup", map[string]any{"to": filepath.Join(ts.root, "inside")})
	require.Equal(t, 400, code, "%s", body)
	assert.Contains(t, string(body), "overlap")
	code, body = ts.call("POST", "/v1/backup", map[string]any{"dir": "/x"})
	require.Equal(t, 400, code, "%s", body)
	code, _ = ts.call("GET", "/v1/backup", nil)
	require.Equal(t, 405, code)
}

// TestScheduledBackup: a server with Maintenance set backs up when a
// backup is due, and only then.
func TestScheduledBackup(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "bk")
	now := time.Date(2026, 9, 30, 10, 0, 0, 0, time.UTC) // the events are of 2026-08-18: due
	rounds := make(chan struct{}, 1024)
	ts := startServer(t, filepath.Join(base, "memory"), ServerOptions{Now: func() time.Time { return now },
		Maintenance: 20 * time.Millisecond, BackupDir: dir, maintained: func() { rounds <- struct{}{} }})
	ts.must(200, "POST", "/v1/events", []any{
		event("m:1", "session/start", "s", "/w/m", map[string]any{"origin": "top"}),
		event("m:2", "compaction/summary", "s", "", map[string]any{"compactionId": "c1", "text": "old work"}),
	}, nil)
	require.Eventually(t, func() bool { _, err := backup.ReadManifest(dir); return err == nil }, time.Minute, 10*time.Millisecond,
		"no scheduled backup came")
	// The day file of 2026-08-18 is older than 30 days: rotated too.
	require.Eventually(t, func() bool {
		_, err := backup.Verify(ts.t.Context(), dir)
		_, serr := os.Stat(filepath.Join(ts.root, "sessions", "archive", "2026-08-18.md"))
		return err == nil && serr == nil
	}, time.Minute, 10*time.Millisecond, "the old day file was not rotated")
	m, err := backup.ReadManifest(dir)
	require.NoError(t, err)
	gen := m.Generation
	// Not due any more: the next rounds back nothing up.
	for len(rounds) > 0 {
		<-rounds
	}
	for i := 0; i < 3; i++ {
		<-rounds
	}
	last, _, err := ts.eng.Store().LastBackup(ts.t.Context())
	require.NoError(t, err)
	m, err = backup.ReadManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, gen, m.Generation)
	assert.True(t, strings.HasPrefix(last, "2026-09-30T10:00:00"), "the backup's event has the server's time: got %s", last)
}
