package projector

import (
	"context"

	"dshmem/events"
	"dshmem/events/payload"
)

// rotate folds a maintenance/rotate event: the rotation cut-off rises
// to data.before (the greatest one folded wins, so folds of different
// streams commute), and every day with blocks between the old cut-off
// and the new one is queued, so that its file is written under
// sessions/archive/ and removed from sessions/. A before that is not a
// day, or not past the cut-off, changes nothing. The cut-off comes from
// the event, never from the clock: replay moves the same files.
func (f *fold) rotate(ev *events.Envelope) error {
	var d payload.MaintenanceRotate
	if payload.Unmarshal(ev.Data, &d) != nil || !ValidDay(d.Before) {
		return nil
	}
	prev, err := f.tx.Rotate(d.Before)
	if err != nil || d.Before <= prev {
		return err
	}
	days, err := f.tx.Reader().BlockDaysBetween(context.Background(), prev, d.Before)
	if err != nil {
		return err
	}
	for _, day := range days {
		f.files.days[day] = true
	}
	return nil
}
