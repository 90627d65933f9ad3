package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"dshmem/sqlstore"
)

// TestScanSessionEventsRows: ScanSessionEvents fills in each event's
// stream and session from its arguments instead of reading them; the
// events it gives are those Events reads, field for field.
func TestScanSessionEventsRows(t *testing.T) {
	ctx := context.Background()
	s, _ := queryFixture(t)
	want, err := s.Events(ctx, sqlstore.EventFilter{Stream: qWS, Session: "s1"})
	require.NoError(t, err)
	require.Len(t, want, 6, "the fixture's session s1: start, 3 messages, memory/ops, a message")
	var got []sqlstore.Event
	require.NoError(t, s.ScanSessionEvents(ctx, qWS, "s1", 1, 100, func(ev sqlstore.Event) error {
		got = append(got, ev)
		return nil
	}))
	assert.Equal(t, want, got)
}
