package events

// SegmentInfo describes one segment of a stream as far as it is
// committed: a copy of its first Size bytes is a valid segment (whole
// batches only, with the seal record when Sealed), whatever a writer
// appends meanwhile.
type SegmentInfo struct {
	Stream   string
	FirstSeq uint64 // from the file name
	Path     string
	Size     int64 // committed bytes; the file may be longer while a batch is written
	Sealed   bool
}

// Snapshot returns the segments of stream in seq order and the seq of
// its last durable event, as committed at the moment of the call. The
// bytes below each Size never change afterwards (the log only appends;
// a sealed segment is never written again), so a backup may copy them
// while the log is written.
func (l *Log) Snapshot(stream string) ([]SegmentInfo, uint64) {
	l.mu.Lock()
	s := l.streams[stream]
	l.mu.Unlock()
	if s == nil {
		return nil, 0
	}
	segs, last := s.snapshot()
	out := make([]SegmentInfo, len(segs))
	for i, seg := range segs {
		out[i] = SegmentInfo{Stream: stream, FirstSeq: seg.first, Path: seg.path, Size: seg.size, Sealed: seg.sealed}
	}
	return out, last
}
