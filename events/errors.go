package events

import (
	"errors"
	"fmt"
)

var (
	// ErrTornTail is returned when a segment ends inside a batch (or in a
	// damaged last batch with nothing valid after it): the mark of a
	// crash during a write. Only the last segment of a stream may have
	// one; OpenLog and Repair cut it off.
	ErrTornTail = errors.New("events: torn tail")

	// ErrStreamFailed is wrapped, together with the cause, by every
	// Append to a stream whose write or fsync failed. The error is
	// sticky until the log is reopened.
	ErrStreamFailed = errors.New("events: stream failed")

	// ErrReadOnly is returned by Append and Enqueue on a log opened with
	// OpenLogReadOnly.
	ErrReadOnly = errors.New("events: log opened read-only")

	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("events: log closed")

	// ErrChecksum means a frame's bytes do not match its checksum.
	ErrChecksum = errors.New("events: checksum mismatch")

	// ErrChain means batches are missing, duplicated, reordered or the
	// hash chain is broken.
	ErrChain = errors.New("events: broken chain")

	// ErrInjected is the default error of FaultFS.
	ErrInjected = errors.New("events: injected fault")
)

// CorruptError reports damage at a byte offset of a segment. It is never
// repaired automatically.
type CorruptError struct {
	Segment string // path of the segment file ("" when reading a bare io.Reader)
	Offset  int64  // byte offset of the damaged frame
	Err     error
}

func (e *CorruptError) Error() string {
	if e.Segment == "" {
		return fmt.Sprintf("events: corrupt segment at offset %d: %v", e.Offset, e.Err)
	}
	return fmt.Sprintf("events: corrupt segment %s at offset %d: %v", e.Segment, e.Offset, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }
