package events

// StreamBytes returns the committed bytes of stream's segments and how
// many segments it has (0, 0 for a stream the log does not hold).
func (l *Log) StreamBytes(stream string) (bytes int64, segments int) {
	l.mu.Lock()
	s := l.streams[stream]
	l.mu.Unlock()
	if s == nil {
		return 0, 0
	}
	segs, _ := s.snapshot()
	for _, seg := range segs {
		bytes += seg.size
	}
	return bytes, len(segs)
}
