package dsh

import (
	"errors"
	"fmt"
)

var (
	// ErrNotSession is returned when the first line of a file is not a DSH
	// session header ({"type":"session",…}).
	ErrNotSession = errors.New("dsh: not a session log (first line is not a session header)")
	// ErrNoHeader is returned by ReadFile when not even the header line is
	// complete, e.g. a log the host has only just created.
	ErrNoHeader = errors.New("dsh: session log has no complete header yet")
	// ErrShrunk is returned by a Follower when the file became shorter than
	// the offset it had reached: the log was replaced or truncated.
	ErrShrunk = errors.New("dsh: session log is shorter than the followed offset")
	// ErrNotBoundary is returned when a Follower is resumed at an offset
	// that is not the end of a whole frame or line of the log.
	ErrNotBoundary = errors.New("dsh: resume offset is not a frame or line boundary")
)

// CorruptError reports a bad frame or line with valid data after it: the
// log is damaged at Offset, not merely still being written.
type CorruptError struct {
	Path   string
	Offset int64 // byte offset of the bad frame or line
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("dsh: corrupt session log %s at byte %d: %v", e.Path, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// errShort means the bytes end before the frame does.
var errShort = errors.New("incomplete frame")

// formatError is a frame header or block header that breaks RFC 8878.
type formatError string

func (e formatError) Error() string { return string(e) }
