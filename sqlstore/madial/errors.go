package madial

import (
	"errors"
	"fmt"
)

var (
	// ErrLang is returned by Load for a language other than "zh" or "en".
	ErrLang = errors.New("madial: unknown language (want zh or en)")
	// ErrUnknownMemory means a dialogue labels a memory id that the
	// memory file does not hold.
	ErrUnknownMemory = errors.New("madial: relevant id not in memory file")
	// ErrForeignMemory means a dialogue labels a memory of another user.
	ErrForeignMemory = errors.New("madial: relevant memory belongs to another user")
	// ErrNoUser means a memory has no user-id and none could be borrowed
	// from the Chinese memory file under the same id.
	ErrNoUser = errors.New("madial: memory has no user-id")
	// ErrTestTurn means a dialogue has no test turn or one outside it.
	ErrTestTurn = errors.New("madial: test turn missing or out of range")
	// ErrDuplicateID means two records in one file share an id.
	ErrDuplicateID = errors.New("madial: duplicate id")
	// ErrShape means a line is valid JSON but not the record the file
	// should hold.
	ErrShape = errors.New("madial: unexpected record shape")
)

// LineError reports what is wrong with one line of a data file.
type LineError struct {
	File string // path of the file
	Line int    // 1-based line number
	Err  error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }
