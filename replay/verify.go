package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/projector"
	"dshmem/sqlstore"
)

// Difference is one way a live root differs from its replay.
type Difference struct {
	Path    string // projection path, or "index.db" for the index
	Problem string // what differs, for people
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Differences []Difference
	Files       int    // projection files compared
	Stats       Stats  // of the rebuild
	Dir         string // where the rebuild was made; removed unless VerifyOptions.Keep
}

// VerifyOptions configure Verify. The zero value works.
type VerifyOptions struct {
	Options
	// Keep leaves the rebuilt root on disk (its path is in the report).
	Keep bool
}

// Verify rebuilds root's log aside, in a new temporary directory, and
// compares the live root with it byte for byte: every projection file
// (present in one and not the other, or different), projector.Dump of
// the live index (live) against the rebuilt one, and projector.DumpFiles
// (what the files table says was written, and the seq each reflects). The caller keeps
// the root still while it runs (holds the writer lock) and has caught
// the live index up with the log.
func Verify(ctx context.Context, log Log, root string, live *sqlstore.Store, opts VerifyOptions) (VerifyReport, error) {
	dir, err := os.MkdirTemp("", "dshmem-verify-")
	if err != nil {
		return VerifyReport{}, fmt.Errorf("verify: %w", err)
	}
	rep := VerifyReport{Dir: dir}
	if !opts.Keep {
		defer os.RemoveAll(dir)
	}
	rep.Stats, err = Rebuild(ctx, log, dir, opts.Options)
	if err != nil {
		return rep, err
	}
	diffs, n, err := CompareFiles(root, dir)
	if err != nil {
		return rep, err
	}
	rep.Files = n
	rep.Differences = diffs
	st, err := sqlstore.Open(filepath.Join(dir, IndexFile))
	if err != nil {
		return rep, err
	}
	defer st.Close()
	for _, dump := range []dumpFunc{projector.Dump, projector.DumpFiles} {
		problem, err := compareDumps(ctx, dump, live, st)
		if err != nil {
			return rep, fmt.Errorf("verify: dump the indexes: %w", err)
		}
		if problem != "" {
			rep.Differences = append(rep.Differences, Difference{Path: IndexFile, Problem: problem})
		}
	}
	return rep, nil
}

type dumpFunc func(context.Context, *sqlstore.Store, io.Writer) error

// compareDumps streams the dumps of two indexes side by side and
// describes the first line where they differ ("" when equal). The dump
// of a million events is hundreds of megabytes; nothing is held whole.
func compareDumps(ctx context.Context, dump dumpFunc, live, rebuilt *sqlstore.Store) (string, error) {
	ra, wa := io.Pipe()
	rb, wb := io.Pipe()
	defer ra.Close() // an early return stops the dumps: their writes fail
	defer rb.Close()
	go func() { wa.CloseWithError(dump(ctx, live, wa)) }()
	go func() { wb.CloseWithError(dump(ctx, rebuilt, wb)) }()
	sa, sb := bufio.NewReaderSize(ra, 1<<20), bufio.NewReaderSize(rb, 1<<20)
	for {
		la, errA := sa.ReadString('\n')
		lb, errB := sb.ReadString('\n')
		for _, err := range []error{errA, errB} {
			if err != nil && err != io.EOF {
				return "", err
			}
		}
		if la != lb {
			return describeDumpLine(strings.TrimSuffix(la, "\n"), strings.TrimSuffix(lb, "\n")), nil
		}
		if errA == io.EOF && errB == io.EOF {
			return "", nil
		}
	}
}

// CompareFiles compares the projection files of two roots byte for byte
// and returns each difference, in path order, and how many paths were
// compared.
func CompareFiles(live, replayed string) ([]Difference, int, error) {
	lf, err := ProjectionFiles(live)
	if err != nil {
		return nil, 0, err
	}
	rf, err := ProjectionFiles(replayed)
	if err != nil {
		return nil, 0, err
	}
	paths := slices.Concat(lf, rf)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	var diffs []Difference
	for _, p := range paths {
		_, inLive := slices.BinarySearch(lf, p) // ProjectionFiles sorts
		_, inReplay := slices.BinarySearch(rf, p)
		switch {
		case !inLive:
			diffs = append(diffs, Difference{Path: p, Problem: "missing from the live root (the log makes it)"})
		case !inReplay:
			diffs = append(diffs, Difference{Path: p, Problem: "in the live root, but the log does not make it"})
		default:
			a, err := os.ReadFile(filepath.Join(live, filepath.FromSlash(p)))
			if err != nil {
				return nil, 0, fmt.Errorf("verify: %w", err)
			}
			b, err := os.ReadFile(filepath.Join(replayed, filepath.FromSlash(p)))
			if err != nil {
				return nil, 0, fmt.Errorf("verify: %w", err)
			}
			if !bytes.Equal(a, b) {
				diffs = append(diffs, Difference{Path: p, Problem: describeFileDiff(a, b)})
			}
		}
	}
	return diffs, len(paths), nil
}

// describeFileDiff says how the live bytes differ from the replayed ones.
func describeFileDiff(live, replayed []byte) string {
	ll, rl := bytes.Count(live, []byte("\n")), bytes.Count(replayed, []byte("\n"))
	line := 1
	n := min(len(live), len(replayed))
	for i := 0; i < n && live[i] == replayed[i]; i++ {
		if live[i] == '\n' {
			line++
		}
	}
	return fmt.Sprintf("differs from the log's version from line %d (live: %d bytes, %d lines; log: %d bytes, %d lines)",
		line, len(live), ll, len(replayed), rl)
}

// describeDumpLine says how the live dump's line differs from the
// rebuilt one's ("" where a dump has ended).
func describeDumpLine(live, rebuilt string) string {
	switch {
	case live == "":
		return "live index lacks the row " + cut(rebuilt, 160)
	case rebuilt == "":
		return "live index has an extra row " + cut(live, 160)
	}
	return fmt.Sprintf("table %s differs: live %s, log %s", tableOf(live), cut(live, 120), cut(rebuilt, 120))
}

func tableOf(line string) string {
	t, _, _ := strings.Cut(line, "\t")
	return t
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
