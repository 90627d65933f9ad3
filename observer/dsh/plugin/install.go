package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"dshmem/markdown"
)

// Options say where to install. The zero value installs this binary into
// $DSH_HOME (else ~/.dsh) with the memory root dshmem would use there.
type Options struct {
	// DSHHome is the host's home; default $DSH_HOME, else ~/.dsh.
	DSHHome string
	// Root is the memory root recorded for the plugin; default
	// $DSH_MEMORY_ROOT, else <DSHHome>/memory.
	Root string
	// Binary is the dshmem the plugin runs; default this process's
	// executable with symlinks resolved. Tests set it: a test binary is
	// not dshmem.
	Binary string
}

// DefaultHome is $DSH_HOME, else ~/.dsh: where the host keeps its home.
func DefaultHome() string {
	if h := os.Getenv("DSH_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".dsh")
	}
	return ".dsh"
}

// resolve fills the defaults and makes every path absolute.
func (o Options) resolve(needBinary bool) (Options, error) {
	var err error
	if o.DSHHome == "" {
		o.DSHHome = DefaultHome()
	}
	if o.DSHHome, err = filepath.Abs(o.DSHHome); err != nil {
		return o, fmt.Errorf("dsh home %s: %w", o.DSHHome, err)
	}
	if o.Root == "" {
		if o.Root = os.Getenv("DSH_MEMORY_ROOT"); o.Root == "" {
			o.Root = filepath.Join(o.DSHHome, "memory")
		}
	}
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		return o, fmt.Errorf("memory root %s: %w", o.Root, err)
	}
	if !needBinary {
		return o, nil
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return o, fmt.Errorf("find this binary: %w", err)
		}
	}
	given := o.Binary
	if o.Binary, err = filepath.Abs(o.Binary); err == nil {
		o.Binary, err = filepath.EvalSymlinks(o.Binary)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return o, fmt.Errorf("binary %s does not exist; give the path of a built dshmem", given)
	}
	if err != nil {
		return o, fmt.Errorf("binary %s: %w", given, err)
	}
	if fi, err := os.Stat(o.Binary); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return o, fmt.Errorf("binary %s is not an executable file; the host would run it for every session", o.Binary)
	}
	return o, nil
}

// Paths inside a DSH home.
func PatchPath(home string) string  { return filepath.Join(home, PatchName) }
func BackupPath(home string) string { return filepath.Join(home, BackupName) }
func PluginPath(home string) string { return filepath.Join(home, DirName, FileName) }

// InstallReport says what Install found and did.
type InstallReport struct {
	DSHHome   string `json:"dshHome"`
	PatchFile string `json:"patchFile"`
	// Row is what happened to our row: added, replaced or unchanged.
	Row     Action `json:"row"`
	RowLine int    `json:"rowLine"`
	Created bool   `json:"created"`          // the patch file did not exist
	Backup  string `json:"backup,omitempty"` // where the previous file was copied
	// DisabledAt is the line that keeps the plugin off (kept as the
	// user set it); 0 when the host will load it.
	DisabledAt int      `json:"disabledAt,omitempty"`
	Patches    []int    `json:"patches,omitempty"` // lines of the user's rows that patch id dshmem
	Dropped    []string `json:"dropped,omitempty"` // hand-added keys the new row does not carry
	Previous   *Entry   `json:"previous,omitempty"`
	Entry      Entry    `json:"entry"`
	PluginFile string   `json:"pluginFile"`
	// Plugin is what happened to the plugin file: written (it was not
	// there), upgraded (its bytes differed) or unchanged.
	Plugin          string   `json:"plugin"`
	Version         string   `json:"version"`
	PreviousVersion string   `json:"previousVersion,omitempty"`
	Warnings        []string `json:"warnings,omitempty"`
}

// goBuildDir matches the temporary directory `go run` and `go test`
// build into; a binary there is deleted when the command exits.
var goBuildDir = regexp.MustCompile(`(^|/)go-build\d*(/|$)`)

// Install writes the plugin file and our row. The plugin file is written
// first, so the host never sees a row whose file is missing. A file the
// row cannot be merged into is refused with a *PatchError before
// anything is written.
func Install(o Options) (*InstallReport, error) {
	o, err := o.resolve(true)
	if err != nil {
		return nil, err
	}
	rep := &InstallReport{DSHHome: o.DSHHome, PatchFile: PatchPath(o.DSHHome), PluginFile: PluginPath(o.DSHHome), Version: Version()}
	if goBuildDir.MatchString(filepath.ToSlash(o.Binary)) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the binary %s is in a temporary go-build directory (go run / go test) and disappears when that command exits; the host would then fail to start the plugin's server. Build it for good and install from that: go build -o ~/bin/dshmem ./cmd/dshmem && ~/bin/dshmem dsh install", o.Binary))
	}
	rep.Entry = Entry{Name: rep.PluginFile, Config: Config{Binary: o.Binary, Root: o.Root, DSHHome: o.DSHHome}}

	old, mode, err := readPatch(rep.PatchFile)
	if err != nil {
		return nil, err
	}
	rep.Created = old == nil
	ed, err := MergeRow(old, rep.Entry)
	if err != nil {
		return nil, withPath(err, rep.PatchFile)
	}
	rep.Row, rep.RowLine, rep.DisabledAt, rep.Patches, rep.Dropped, rep.Previous = ed.Action, ed.Line, ed.DisabledAt, ed.Patches, ed.Dropped, ed.Old
	rep.Entry.Disabled = rep.Entry.Disabled || (ed.Old != nil && ed.Old.Disabled)

	if err := os.MkdirAll(filepath.Dir(rep.PluginFile), 0o700); err != nil {
		return nil, fmt.Errorf("install plugin: %w", err)
	}
	have, err := os.ReadFile(rep.PluginFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rep.Plugin = "written"
	case err != nil:
		return nil, fmt.Errorf("install plugin: %w", err)
	case bytes.Equal(have, source):
		rep.Plugin = "unchanged"
	default:
		rep.Plugin, rep.PreviousVersion = "upgraded", VersionOf(have)
		if rep.PreviousVersion == "" {
			rep.PreviousVersion = "unknown"
		}
	}
	if rep.Plugin != "unchanged" {
		if err := markdown.WriteFileAtomic(rep.PluginFile, source, 0o600); err != nil {
			return nil, fmt.Errorf("install plugin: %w", err)
		}
	}
	if ed.Action == Unchanged {
		return rep, nil
	}
	if old != nil {
		if err := markdown.WriteFileAtomic(BackupPath(o.DSHHome), old, mode); err != nil {
			return nil, fmt.Errorf("back up %s: %w", rep.PatchFile, err)
		}
		rep.Backup = BackupPath(o.DSHHome)
	}
	// Atomic, so that the host, which reloads cordis.patch.yml while it
	// runs, sees the old file or the new, never half.
	if err := markdown.WriteFileAtomic(linkTarget(rep.PatchFile), ed.Text, mode); err != nil {
		return nil, fmt.Errorf("add dshmem's row: %w", err)
	}
	return rep, nil
}

// UninstallReport says what Uninstall found and did.
type UninstallReport struct {
	DSHHome   string `json:"dshHome"`
	PatchFile string `json:"patchFile"`
	Row       Action `json:"row"` // removed or absent
	RowLine   int    `json:"rowLine,omitempty"`
	Backup    string `json:"backup,omitempty"`
	// FileRemoved: our row was all the file held, so the file is gone
	// (an empty file would stop the host). EmptyList: comments were left,
	// so "[]" was added for the host to read a sequence.
	FileRemoved bool     `json:"fileRemoved,omitempty"`
	EmptyList   bool     `json:"emptyList,omitempty"`
	Patches     []int    `json:"patches,omitempty"` // the user's rows {id: dshmem, …}, kept
	Removed     []string `json:"removed,omitempty"` // files and directories removed
	Kept        []string `json:"kept,omitempty"`    // what was left in <dsh-home>/dshmem/, not ours
}

// Uninstall removes our row (after a backup of the file) and then the
// files Install wrote; never anything else, and never the memory root.
func Uninstall(o Options) (*UninstallReport, error) {
	o, err := o.resolve(false)
	if err != nil {
		return nil, err
	}
	rep := &UninstallReport{DSHHome: o.DSHHome, PatchFile: PatchPath(o.DSHHome), Row: Absent}
	old, mode, err := readPatch(rep.PatchFile)
	if err != nil {
		return nil, err
	}
	if old != nil {
		ed, err := RemoveRow(old)
		if err != nil {
			return nil, withPath(err, rep.PatchFile)
		}
		rep.Row, rep.RowLine, rep.Patches = ed.Action, ed.Line, ed.Patches
		if ed.Action == Removed {
			if err := markdown.WriteFileAtomic(BackupPath(o.DSHHome), old, mode); err != nil {
				return nil, fmt.Errorf("back up %s: %w", rep.PatchFile, err)
			}
			rep.Backup = BackupPath(o.DSHHome)
			if ed.Delete && linkTarget(rep.PatchFile) != rep.PatchFile {
				// A symlink (a dotfiles repository, say) keeps its file.
				ed.Text, ed.Delete, ed.EmptyList = []byte("[]\n"), false, true
			}
			if ed.Delete {
				if err := os.Remove(rep.PatchFile); err != nil {
					return nil, fmt.Errorf("remove dshmem's row: %w", err)
				}
				markdown.SyncDir(o.DSHHome)
				rep.FileRemoved = true
			} else if err := markdown.WriteFileAtomic(linkTarget(rep.PatchFile), ed.Text, mode); err != nil {
				return nil, fmt.Errorf("remove dshmem's row: %w", err)
			}
			rep.EmptyList = ed.EmptyList
		}
	}
	// The row is gone: now the host no longer needs the file.
	dir := filepath.Dir(PluginPath(o.DSHHome))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove plugin: %w", err)
	}
	left := 0
	for _, e := range ents {
		// plugin.mjs, and temp files of an interrupted markdown.WriteFileAtomic.
		if e.Name() == FileName || (strings.HasPrefix(e.Name(), "."+FileName+".tmp-") && e.Type().IsRegular()) {
			p := filepath.Join(dir, e.Name())
			if err := os.Remove(p); err != nil {
				return nil, fmt.Errorf("remove plugin: %w", err)
			}
			rep.Removed = append(rep.Removed, p)
			continue
		}
		left++
		rep.Kept = append(rep.Kept, filepath.Join(dir, e.Name()))
	}
	if left == 0 {
		if err := os.Remove(dir); err != nil {
			return nil, fmt.Errorf("remove plugin: %w", err)
		}
		rep.Removed = append(rep.Removed, dir)
	}
	markdown.SyncDir(o.DSHHome)
	return rep, nil
}

// linkTarget returns the file a symlink at path points to, or path: the
// patch file is written where it lives, so that a link to it (from a
// dotfiles repository, say) stays a link.
func linkTarget(path string) string {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return path
	}
	if t, err := filepath.EvalSymlinks(path); err == nil {
		return t
	}
	return path
}

// readPatch reads the patch file; a missing file is nil with mode 0600,
// the mode a new file gets.
func readPatch(path string) ([]byte, os.FileMode, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, fi.Mode().Perm(), nil
}

func withPath(err error, path string) error {
	var pe *PatchError
	if errors.As(err, &pe) {
		pe.Path = path
	}
	return err
}
