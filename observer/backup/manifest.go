package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/markdown"
)

// Names inside a backup directory. Part of the backup format; do not
// change.
const (
	ManifestFile = "manifest.json"
	LockFile     = "backup.lock"
	LogDir       = "log"
	// ManifestFormat is the version of the manifest's shape.
	ManifestFormat = 1
)

// Manifest says what a backup directory holds. Its JSON form is
// manifest.json; part of the backup format.
type Manifest struct {
	Format     int    `json:"format"`
	Generation uint64 `json:"generation"` // counts the runs that changed the backup
	Created    string `json:"created"`    // when that run was made (RFC 3339)
	Root       string `json:"root"`       // the root it was taken from
	// Streams gives the last seq of every stream the copied log holds.
	Streams map[string]uint64 `json:"streams"`
	// Index is the snapshot of index.db; nil in none.
	Index *IndexSnapshot `json:"index,omitempty"`
	// Files are the copied segments, by path.
	Files []File `json:"files"`
}

// IndexSnapshot is the index file of a backup.
type IndexSnapshot struct {
	Path   string `json:"path"` // relative to the backup directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Cursors are the seqs the snapshot reflects, read from it: never
	// past the manifest's Streams.
	Cursors map[string]uint64 `json:"cursors"`
}

// File is one copied segment.
type File struct {
	Path   string `json:"path"` // log/<stream>/<segment>, '/'-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Sealed bool   `json:"sealed,omitempty"`
	// SourceMtime is the root's segment's modification time (Unix
	// nanoseconds) when it was copied: a sealed segment with the same
	// size and time is not read again.
	SourceMtime int64 `json:"sourceMtime,omitempty"`
}

// ErrNoManifest says a directory holds no backup.
var ErrNoManifest = errors.New("backup: no manifest")

// ReadManifest reads dir/manifest.json. A directory without one is an
// error wrapping ErrNoManifest.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s holds no %s (is it a dshmem backup? 'dshmem backup --to %s' makes one)", ErrNoManifest, dir, ManifestFile, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read backup manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read backup manifest %s: %w (the file is damaged; run 'dshmem backup' to make a new backup)", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("read backup manifest %s: format %d, this build reads %d", filepath.Join(dir, ManifestFile), m.Format, ManifestFormat)
	}
	for _, f := range m.Files {
		if !safeRel(f.Path) || !strings.HasPrefix(f.Path, LogDir+"/") {
			return nil, fmt.Errorf("read backup manifest %s: file path %q is not a log segment inside the backup", filepath.Join(dir, ManifestFile), f.Path)
		}
	}
	if m.Index != nil && (!safeRel(m.Index.Path) || strings.Contains(m.Index.Path, "/")) {
		return nil, fmt.Errorf("read backup manifest %s: index path %q is not a file of the backup", filepath.Join(dir, ManifestFile), m.Index.Path)
	}
	return &m, nil
}

// safeRel reports whether p is a clean relative '/'-path that stays
// inside its directory: a manifest is outside input.
func safeRel(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// write puts m into dir atomically (temporary file, fsync, rename,
// fsync of the directory).
func (m *Manifest) write(dir string) error {
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode backup manifest: %w", err)
	}
	return markdown.WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'), backupFileMode)
}

// file returns the entry of path, or nil.
func (m *Manifest) file(path string) *File {
	if m == nil {
		return nil
	}
	for i := range m.Files {
		if m.Files[i].Path == path {
			return &m.Files[i]
		}
	}
	return nil
}

// Bytes is the size of every file the manifest names.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	if m.Index != nil {
		n += m.Index.Size
	}
	return n
}
