package projector

import (
	"context"
	"fmt"
	"slices"

	"dshmem/events"
)

// Source is the part of the event log CatchUp reads. *events.Log
// satisfies it.
type Source interface {
	// Streams lists the streams of the log.
	Streams() []string
	// Scan calls fn for each event of stream with seq ≥ fromSeq, in seq
	// order, until fn returns an error (which Scan returns).
	Scan(stream string, fromSeq uint64, fn func(events.Envelope) error) error
}

// CatchUp folds every stream of src from its cursor + 1 to its end, in
// chunks of ChunkSize events, one transaction each; progress (optional)
// is called after each chunk commits with the stream and its new cursor.
// Streams are folded in sorted name order; the result does not depend on
// the order (folds of different streams commute), only the progress
// reports do.
func (p *Projector) CatchUp(ctx context.Context, src Source, progress func(stream string, seq uint64)) error {
	chunk := p.ChunkSize
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	if l, ok := src.(interface {
		Lost(stream string, first, last uint64) bool
	}); ok && p.Lost == nil {
		p.Lost = l.Lost // a salvaged stream's lost seqs are stepped over
	}
	streams := slices.Clone(src.Streams())
	slices.Sort(streams)
	streams = slices.Compact(streams)
	batch := make([]events.Envelope, 0, chunk)
	for _, stream := range streams {
		cur, err := p.s.Cursor(stream)
		if err != nil {
			return fmt.Errorf("catch up %s: %w", stream, err)
		}
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if err := p.Fold(ctx, batch); err != nil {
				return err
			}
			last := batch[len(batch)-1].Seq
			batch = batch[:0]
			if progress != nil {
				progress(stream, last)
			}
			return nil
		}
		err = src.Scan(stream, cur+1, func(ev events.Envelope) error {
			if ev.Stream != stream {
				return fmt.Errorf("event %q at seq %d says stream %q", ev.ID, ev.Seq, ev.Stream)
			}
			// The source may reuse the buffer behind Data between
			// calls; the batch outlives the call.
			ev.Data = slices.Clone(ev.Data)
			batch = append(batch, ev)
			if len(batch) < chunk {
				return nil
			}
			return flush()
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return fmt.Errorf("catch up %s from seq %d: %w", stream, cur+1, err)
		}
	}
	return nil
}
