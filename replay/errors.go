package replay

import "errors"

var (
	// ErrBadPath is wrapped by every error of ValidatePath.
	ErrBadPath = errors.New("replay: bad projection path")

	// ErrNotEmpty means Rebuild was given a directory that already holds
	// files; a rebuild never writes over anything.
	ErrNotEmpty = errors.New("replay: output directory is not empty")

	// ErrNoSuchFile means the file did not exist at the point asked
	// (a knowledge topic without entries then, a day without blocks yet).
	ErrNoSuchFile = errors.New("replay: no such projection at that point")

	// ErrBadPoint means --at does not suit the file: a stream file takes
	// a seq, a sessions file a time.
	ErrBadPoint = errors.New("replay: bad point for this file")
)
