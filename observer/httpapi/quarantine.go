package httpapi

import (
	"slices"

	"dshmem/events"
)

// A quarantined stream (a damaged log, events/quarantine.go) is listed
// by GET /v1/healthz under "quarantined", and every answer that includes
// its scope — recall, search, context, a packet — carries the same
// field, "quarantined": [{stream, segment, offset, reason, serves}], so
// a host can tell that what it reads of that scope stops at the damage.
// The field is absent when nothing the answer includes is quarantined.

// quarantinedIn lists the quarantined streams among scopes; with no
// scopes (a search over every stream), every quarantined stream.
func (s *Server) quarantinedIn(scopes ...string) []events.Damage {
	lg := s.eng.Log()
	if lg == nil {
		return nil
	}
	all := lg.Quarantined()
	if len(scopes) == 0 || len(all) == 0 {
		return all
	}
	var out []events.Damage
	for _, d := range all {
		if slices.Contains(scopes, d.Stream) {
			out = append(out, d)
		}
	}
	return out
}
