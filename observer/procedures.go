package observer

import (
	"context"
	"encoding/json"

	"dshmem/events/payload"
)

// Procedures returns the learned procedures of stream (issue 16) in the
// given stages (none: every stage), by id. A state that does not decode
// is left out.
func (e *Engine) Procedures(ctx context.Context, stream string, stages ...string) ([]payload.Procedure, error) {
	rows, err := e.store.Procedures(ctx, stream, stages...)
	if err != nil {
		return nil, err
	}
	out := make([]payload.Procedure, 0, len(rows))
	for _, r := range rows {
		var p payload.Procedure
		if json.Unmarshal([]byte(r.State), &p) == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
