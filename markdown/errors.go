package markdown

import (
	"errors"
	"fmt"
)

var (
	// ErrTooLarge is returned by Parse for an input longer than MaxParseBytes.
	ErrTooLarge = errors.New("markdown: file too large")

	// ErrNotUTF8 is returned by Parse for a line that is not valid UTF-8.
	ErrNotUTF8 = errors.New("markdown: not valid UTF-8")

	// ErrNotEntry is returned by ParseEntry for a block whose anchor is
	// not a mem: anchor (a compaction or session block).
	ErrNotEntry = errors.New("markdown: not an entry block")

	// ErrNotSession is returned by ParseSessionBlock for a block that is
	// not anchored as compaction: or session:.
	ErrNotSession = errors.New("markdown: not a session block")

	// ErrNoHeading means an anchored block has no "###" heading under its
	// anchor line (the heading was deleted or turned into something else).
	ErrNoHeading = errors.New("markdown: anchored block has no ### heading")

	// ErrNoMeta means an anchored entry block lost its *meta* line.
	ErrNoMeta = errors.New("markdown: anchored block has no *meta* line")

	// ErrMeta means the meta line holds an item that cannot be read.
	ErrMeta = errors.New("markdown: bad meta line")
)

// LineError reports a problem at a 1-based line of a parsed file.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// BlockError reports a block that cannot be read back into its fields.
type BlockError struct {
	Anchor string // "" for a block without anchor
	Line   int    // 1-based line where the block starts
	Err    error
}

func (e *BlockError) Error() string {
	if e.Anchor == "" {
		return fmt.Sprintf("block at line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("block %s at line %d: %v", e.Anchor, e.Line, e.Err)
}
func (e *BlockError) Unwrap() error { return e.Err }
