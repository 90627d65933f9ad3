package backup

import (
	"context"
	"fmt"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/broker"
)

// RotateReport says what Rotate did. Its JSON form is what
// `dshmem rotate --json` prints.
type RotateReport struct {
	Before   string   `json:"before"`   // the cut-off day: day files of earlier days go to sessions/archive/
	Days     []string `json:"days"`     // the days moved by this rotation
	EventSeq uint64   `json:"eventSeq"` // the maintenance/rotate event's seq in the global stream; 0: nothing to move
}

// Cutoff is the rotation cut-off at now: the day SessionRotateAfter
// before it (UTC), as Maintenance counts old day files.
func Cutoff(now time.Time) string {
	return now.UTC().Add(-broker.SessionRotateAfter).Format(time.DateOnly)
}

// Rotate moves the session files older than SessionRotateAfter into
// sessions/archive/: when the index holds blocks of days before the
// cut-off that are not archived yet, it appends a maintenance/rotate
// event naming the cut-off to the global stream, and the fold moves
// them (projector/rotation.go), so replay agrees. With nothing to move
// it appends nothing. now zero is the wall clock.
func Rotate(ctx context.Context, eng *observer.Engine, now time.Time) (RotateReport, error) {
	if now.IsZero() {
		now = time.Now()
	}
	rep := RotateReport{Before: Cutoff(now), Days: []string{}}
	if eng.ReadOnly() {
		return rep, fmt.Errorf("rotate: %w", observer.ErrReadOnly)
	}
	r := eng.Store().Reader()
	prev, err := r.Rotated(ctx)
	if err != nil {
		return rep, fmt.Errorf("rotate: %w", err)
	}
	if rep.Before <= prev {
		return rep, nil
	}
	days, err := r.BlockDaysBetween(ctx, prev, rep.Before)
	if err != nil {
		return rep, fmt.Errorf("rotate: %w", err)
	}
	if len(days) == 0 {
		return rep, nil
	}
	raw, err := payload.Marshal(payload.MaintenanceRotate{Before: rep.Before})
	if err != nil {
		return rep, fmt.Errorf("rotate: %w", err)
	}
	id, err := observer.RandomHex()
	if err != nil {
		return rep, err
	}
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:rotate:" + id, Type: events.TypeMaintenanceRotate,
		Time: observer.EventTime(now), Stream: observer.GlobalStream, Data: raw}
	if rep.EventSeq, err = appendOwn(ctx, eng, env); err != nil {
		return rep, fmt.Errorf("rotate: %w", err)
	}
	if err := eng.WriteFiles(ctx); err != nil {
		return rep, fmt.Errorf("rotate: the event is in the log, but writing the files failed (the next write retries): %w", err)
	}
	rep.Days = days
	return rep, nil
}

// Due says why a backup of eng's root is due at now, or "" when it is
// not (broker.BackupDue over the index's record of backups).
func Due(ctx context.Context, eng *observer.Engine, now time.Time) (string, error) {
	last, first, err := eng.Store().LastBackup(ctx)
	if err != nil {
		return "", err
	}
	return broker.BackupDue(last, first, now), nil
}
