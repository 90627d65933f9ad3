package dsh

import "testing"

// TestStatsAddToZero: a zero Stats can be added to, and adding copies the
// counts rather than sharing the other's maps.
func TestStatsAddToZero(t *testing.T) {
	o := newStats()
	o.Events, o.Skipped["turn/start"], o.Unknown["future/x"] = 3, 2, 1
	var s Stats
	s.Add(o)
	s.Add(o)
	if s.Events != 6 || s.Skipped["turn/start"] != 4 || s.Unknown["future/x"] != 2 || s.Malformed == nil {
		t.Fatalf("got %v, want the counts doubled", s)
	}
	if o.Skipped["turn/start"] != 2 {
		t.Errorf("Add changed its argument: %v", o)
	}
}
