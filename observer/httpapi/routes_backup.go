package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"dshmem/observer/backup"
)

// The housekeeping of a root: POST /v1/backup and /v1/rotate (what
// `dshmem backup` and `dshmem rotate` forward when a server holds the
// root), and the schedule that runs both when they are due.

// BackupAPIRequest is the body of POST /v1/backup.
type BackupAPIRequest struct {
	// To is the backup directory, absolute; "" is the server's default
	// (ServerOptions.BackupDir, else backup.DefaultDir of the root).
	To string `json:"to,omitempty"`
}

// RotateAPIRequest is the body of POST /v1/rotate (no field yet).
type RotateAPIRequest struct{}

// maintenance serializes the backups and rotations of one server.
type maintenance struct {
	mu sync.Mutex
}

func (s *Server) backupDir(to string) string {
	if to != "" {
		return to
	}
	if s.opts.BackupDir != "" {
		return s.opts.BackupDir
	}
	return backup.DefaultDir(s.eng.Root())
}

// runBackup runs one backup now, after any other this server runs.
func (s *Server) runBackup(ctx context.Context, to string) (backup.Report, error) {
	s.maint.mu.Lock()
	defer s.maint.mu.Unlock()
	return backup.Run(ctx, s.eng, backup.Options{To: s.backupDir(to), Now: s.opts.Now()})
}

func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) (int, error) {
	var req BackupAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	if req.To != "" && !isAbs(req.To) {
		return writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("to %q is not an absolute path: the server's working directory is not yours", req.To))
	}
	// A backup of a large root takes seconds: a client leaving must not
	// cut it in half (it commits or leaves the last backup as it was).
	rep, err := s.runBackup(context.WithoutCancel(r.Context()), req.To)
	var de *backup.DirError
	switch {
	case errors.As(err, &de):
		return writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, backup.ErrBusy):
		return writeError(w, http.StatusConflict, CodeConflict, err.Error())
	case err != nil:
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "backup: "+err.Error())
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (s *Server) handleRotate(w http.ResponseWriter, r *http.Request) (int, error) {
	var req RotateAPIRequest
	if c, ok := decodeBody(w, r, &req); !ok {
		return c, nil
	}
	s.maint.mu.Lock()
	rep, err := backup.Rotate(context.WithoutCancel(r.Context()), s.eng, s.opts.Now())
	s.maint.mu.Unlock()
	if err != nil {
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, err.Error())
	}
	return writeJSON(w, http.StatusOK, rep)
}

// maintenanceDelay is how long after start the first round runs: not
// in the first requests' way (the host's first session waits for the
// server), and late enough that the first context still says what is
// due, which the round then does.
const maintenanceDelay = time.Minute

// runMaintenance runs a backup when one is due (broker.BackupDue) and
// rotates old session files: soon after start (maintenanceDelay, or
// the interval when that is shorter) and every ServerOptions.Maintenance.
func (s *Server) runMaintenance(ctx context.Context) {
	first := time.NewTimer(min(maintenanceDelay, s.opts.Maintenance))
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	t := time.NewTicker(s.opts.Maintenance)
	defer t.Stop()
	for {
		s.maintain(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maintain is one round of the schedule.
func (s *Server) maintain(ctx context.Context) {
	now := s.opts.Now()
	why, err := backup.Due(ctx, s.eng, now)
	if err != nil {
		s.opts.Logf("check whether a backup is due: %v", err)
	} else if why != "" {
		rep, err := s.runBackup(ctx, "")
		if err != nil {
			s.opts.Logf("scheduled backup (%s): %v", why, err)
		} else {
			s.opts.Logf("scheduled backup (%s): %s, generation %d, %d files copied (%d bytes)", why, rep.To, rep.Generation, len(rep.Copied), rep.CopiedBytes)
		}
	}
	s.maint.mu.Lock()
	rep, err := backup.Rotate(ctx, s.eng, now)
	s.maint.mu.Unlock()
	switch {
	case err != nil:
		s.opts.Logf("rotate session files: %v", err)
	case len(rep.Days) > 0:
		s.opts.Logf("rotated %d session files before %s into sessions/archive/", len(rep.Days), rep.Before)
	}
	if s.opts.maintained != nil {
		s.opts.maintained()
	}
}

// isAbs reports whether p is an absolute path on this system.
func isAbs(p string) bool { return filepath.IsAbs(p) }
