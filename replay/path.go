package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"dshmem/projector"
)

// ValidatePath checks a projection path given relative to root and
// returns it cleaned and '/'-separated. It refuses, each with its own
// message (all wrapping ErrBadPath): an empty or absolute path, a ".."
// element, a path that leaves root through a symlink (in any existing
// directory on the way, or the file itself), and a path that is not a
// projection dshmem writes.
func ValidatePath(root, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", fmt.Errorf("%w: empty; give a path relative to the root, such as sessions/2026-08-18.md", ErrBadPath)
	}
	slashed := strings.ReplaceAll(p, `\`, "/")
	if filepath.IsAbs(p) || strings.HasPrefix(slashed, "/") || filepath.VolumeName(p) != "" || len(slashed) > 1 && slashed[1] == ':' {
		return "", fmt.Errorf("%w: %q is absolute; give it relative to the root %s, such as sessions/2026-08-18.md", ErrBadPath, p, root)
	}
	for _, el := range strings.Split(slashed, "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q has a \"..\" element; a projection lies inside the root", ErrBadPath, p)
		}
	}
	rel := path.Clean(slashed)
	if err := insideRoot(root, rel); err != nil {
		return "", fmt.Errorf("%w: %q %v", ErrBadPath, p, err)
	}
	if _, ok := projector.ParsePath(rel); !ok {
		return "", fmt.Errorf("%w: %q is not a projection dshmem writes (global.md, index.md, knowledge/TOPIC.md, sessions/YYYY-MM-DD.md, scopes/ws-ID/memory_summary.md, scopes/ws-ID/scope.json, scopes/ws-ID/summary_history/SEQ.md)", ErrBadPath, p)
	}
	return rel, nil
}

// insideRoot resolves every existing prefix of rel below root through
// symlinks and checks that each stays inside root.
func insideRoot(root, rel string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("cannot be checked: the root %s: %v", root, err)
	}
	cur := root
	for _, el := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, el)
		if _, err := os.Lstat(cur); errors.Is(err, fs.ErrNotExist) {
			return nil // nothing further exists, so nothing further can point out
		} else if err != nil {
			return fmt.Errorf("cannot be checked: %v", err)
		}
		real, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return fmt.Errorf("cannot be resolved: %v", err)
		}
		r, err := filepath.Rel(realRoot, real)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return fmt.Errorf("leaves the root through a symlink (%s → %s)", cur, real)
		}
	}
	return nil
}
