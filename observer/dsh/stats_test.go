package dsh

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsAddToZero: a zero Stats can be added to, and adding copies the
// counts rather than sharing the other's maps.
func TestStatsAddToZero(t *testing.T) {
	o := newStats()
	o.Events, o.Skipped["turn/start"], o.Unknown["future/x"] = 3, 2, 1
	var s Stats
	s.Add(o)
	s.Add(o)
	require.EqualValues(t, 6, s.Events, "got %v, want the counts doubled", s)
	require.EqualValues(t, 4, s.Skipped["turn/start"], "got %v, want the counts doubled", s)
	require.EqualValues(t, 2, s.Unknown["future/x"], "got %v, want the counts doubled", s)
	require.NotNil(t, s.Malformed, "got %v, want the counts doubled", s)
	assert.EqualValues(t, 2, o.Skipped["turn/start"], "Add changed its argument: %v", o)
}
