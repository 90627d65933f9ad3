package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// A salvage runs in steps, each durable before the next, under
// <quarantine>/<stream>.<time>/ (Q):
//
//  1. The new chain is written into Q/new/ (every segment fsynced, then
//     the directory) and read back whole (Verify's walk). Step "written".
//  2. Q/salvage.json, the journal, is written (temporary file, fsync,
//     rename, fsync): state "ready". Step "ready".
//  3. <log>/<stream> is renamed to Q/damaged (both directories
//     fsynced). Step "moved".
//  4. Q/new is renamed to <log>/<stream>. Step "swapped"; the journal
//     says "swapped".
//  5. The caller rebuilds what it derived from the stream (the index),
//     then the journal says "done".
//
// A crash before step 2 leaves Q without a journal and the stream as it
// was: FinishSalvage removes Q/new (new bytes only). After step 2 it
// rolls forward: the renames not yet made are made, then step 5 runs.
// Nothing in Q/damaged is ever removed.

const (
	salvageJournal = "salvage.json"
	salvageNew     = "new"
	salvageDamaged = "damaged"
)

// salvageState is the journal of one salvage.
type salvageState struct {
	Stream string        `json:"stream"`
	State  string        `json:"state"` // ready | swapped | done
	Report SalvageReport `json:"report"`
}

func runSalvage(fsys FS, logDir, quarantineDir, stream string, plan salvagePlan, opts SalvageOptions) (SalvageReport, error) {
	r := plan.report
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	step := func(name string) {
		if opts.Step != nil {
			opts.Step(name)
		}
	}
	if err := fsys.MkdirAll(quarantineDir, 0o755); err != nil {
		return r, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	q := ""
	for i := 1; ; i++ {
		q = filepath.Join(quarantineDir, stream+"."+now.UTC().Format("20060102T150405Z"))
		if i > 1 {
			q = fmt.Sprintf("%s.%d", q, i)
		}
		if _, err := fsys.Stat(q); errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	r.MovedTo = filepath.Join(q, salvageDamaged)
	newDir := filepath.Join(q, salvageNew)
	if err := fsys.MkdirAll(newDir, 0o755); err != nil {
		return r, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	if err := syncDir(fsys, quarantineDir); err != nil {
		return r, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	names, err := writeChain(fsys, newDir, stream, plan.items, opts.SegmentSize)
	if err != nil {
		return r, fmt.Errorf("salvage stream %s: write the new segments: %w", stream, err)
	}
	for _, n := range names {
		r.Segments = append(r.Segments, filepath.Join(logDir, stream, n))
	}
	problems, checked, err := verifyStreams(context.Background(), fsys, newDir, []string{stream}, func(string) ([]segRef, error) {
		return listSegments(fsys, newDir)
	})
	if err != nil {
		return r, fmt.Errorf("salvage stream %s: read back the new segments: %w", stream, err)
	}
	if len(problems) > 0 || checked.Events != r.Last {
		return r, fmt.Errorf("salvage stream %s: the new segments in %s do not verify (%v; %d seqs, want %d); the stream was not changed", stream, newDir, problems, checked.Events, r.Last)
	}
	step("written")
	if err := writeJSONFile(fsys, filepath.Join(q, salvageJournal), salvageState{Stream: stream, State: "ready", Report: r}); err != nil {
		return r, fmt.Errorf("salvage stream %s: %w", stream, err)
	}
	step("ready")
	if err := finishOne(fsys, logDir, q, step); err != nil {
		return r, err
	}
	return r, nil
}

// writeChain writes the items as segments of stream into dir, rolling
// at size; every segment but the last is sealed. It returns the file
// names.
func writeChain(fsys FS, dir, stream string, items []salvageItem, size int64) ([]string, error) {
	if size <= 0 {
		size = Options{}.withDefaults().SegmentSize
	}
	var (
		names []string
		out   []byte
		first uint64
		chain [32]byte
		enc   = sharedEncoder()
	)
	flush := func(seal bool) error {
		if out == nil {
			return nil
		}
		if seal {
			out = appendSeal(out, Seal{FirstSeq: first, Count: uint32(items[0].h.FirstSeq - first), Last: chain})
		}
		name := SegmentName(first)
		f, err := fsys.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(out)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		names = append(names, name)
		out = nil
		return err
	}
	for len(items) > 0 {
		it := items[0]
		if out == nil {
			first = it.h.FirstSeq
			out = enc.EncodeAll(encodeStreamHeader(stream, first, chain), nil)
		}
		if it.raw != nil {
			out = append(out, it.raw...)
		} else {
			out = appendGap(out, it.h.FirstSeq, it.h.Count, it.h.Prev, it.h.Checksum)
		}
		chain = it.h.Next()
		items = items[1:]
		if int64(len(out)) >= size && len(items) > 0 {
			if err := flush(true); err != nil {
				return names, err
			}
		}
	}
	if err := flush(false); err != nil {
		return names, err
	}
	return names, syncDir(fsys, dir)
}

// FinishSalvage finishes every salvage under quarantineDir that a crash
// interrupted (see the steps above), then calls rebuilt (when set) for
// each stream whose salvage swapped its segments but whose derived
// state is not yet rebuilt, and marks it done. It returns the reports
// of the salvages it finished (Resumed set). OpenLog's caller runs it
// before opening the log.
func FinishSalvage(logDir, quarantineDir string, rebuilt func(stream string) error) ([]SalvageReport, error) {
	fsys := FS(OSFS{})
	ents, err := fsys.ReadDir(quarantineDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finish salvage: %w", err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	var done []SalvageReport
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		q := filepath.Join(quarantineDir, e.Name())
		st, ok, err := readSalvageState(fsys, q)
		if err != nil {
			return done, err
		}
		if !ok {
			// Interrupted before its journal: only new bytes are there.
			if _, err := fsys.Stat(filepath.Join(q, salvageDamaged)); err == nil {
				continue // not ours to touch
			}
			if err := os.RemoveAll(filepath.Join(q, salvageNew)); err != nil {
				return done, fmt.Errorf("finish salvage: %w", err)
			}
			os.Remove(q) // empty now; a stray file keeps it
			continue
		}
		if st.State == "done" {
			continue
		}
		if err := finishOne(fsys, logDir, q, nil); err != nil {
			return done, err
		}
		if rebuilt != nil {
			if err := rebuilt(st.Stream); err != nil {
				return done, err
			}
			if err := MarkSalvageDone(quarantineDir, filepath.Base(q)); err != nil {
				return done, err
			}
		}
		st.Report.Resumed = true
		done = append(done, st.Report)
	}
	return done, nil
}

// finishOne makes the renames of a salvage whose journal is ready or
// swapped, each only if not made yet, and records "swapped".
func finishOne(fsys FS, logDir, q string, step func(string)) error {
	st, _, err := readSalvageState(fsys, q)
	if err != nil {
		return err
	}
	sdir := filepath.Join(logDir, st.Stream)
	damaged, newDir := filepath.Join(q, salvageDamaged), filepath.Join(q, salvageNew)
	exists := func(p string) bool { _, err := fsys.Stat(p); return err == nil }
	if exists(newDir) && exists(sdir) && !exists(damaged) {
		if err := fsys.Rename(sdir, damaged); err != nil {
			return fmt.Errorf("salvage stream %s: move the damaged segments aside: %w", st.Stream, err)
		}
		if err := syncDirs(fsys, logDir, q); err != nil {
			return fmt.Errorf("salvage stream %s: %w", st.Stream, err)
		}
	}
	if step != nil {
		step("moved")
	}
	if exists(newDir) && !exists(sdir) {
		if err := fsys.Rename(newDir, sdir); err != nil {
			return fmt.Errorf("salvage stream %s: put the new segments in place: %w", st.Stream, err)
		}
		if err := syncDirs(fsys, logDir, q); err != nil {
			return fmt.Errorf("salvage stream %s: %w", st.Stream, err)
		}
	}
	if st.State == "ready" {
		st.State = "swapped"
		if err := writeJSONFile(fsys, filepath.Join(q, salvageJournal), st); err != nil {
			return fmt.Errorf("salvage stream %s: %w", st.Stream, err)
		}
	}
	if step != nil {
		step("swapped")
	}
	return nil
}

// MarkSalvageDone records that what was derived from a salvaged stream
// was rebuilt: name is the salvage's directory under quarantineDir.
func MarkSalvageDone(quarantineDir, name string) error {
	fsys := FS(OSFS{})
	q := filepath.Join(quarantineDir, name)
	st, ok, err := readSalvageState(fsys, q)
	if err != nil || !ok {
		return err
	}
	st.State = "done"
	return writeJSONFile(fsys, filepath.Join(q, salvageJournal), st)
}

func syncDirs(fsys FS, dirs ...string) error {
	for _, d := range dirs {
		if err := syncDir(fsys, d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	return nil
}

func readSalvageState(fsys FS, q string) (salvageState, bool, error) {
	var st salvageState
	b, err := os.ReadFile(filepath.Join(q, salvageJournal))
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("read salvage journal in %s: %w", q, err)
	}
	if err := json.Unmarshal(b, &st); err != nil || !ValidStream(st.Stream) {
		return st, false, fmt.Errorf("salvage journal %s does not decode (%v); look at it, and move the directory away to go on", filepath.Join(q, salvageJournal), err)
	}
	return st, true, nil
}

// writeJSONFile writes v to path atomically: temporary file, fsync,
// rename, fsync of the directory.
func writeJSONFile(fsys FS, path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(fsys, filepath.Dir(path))
	}
	if err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
