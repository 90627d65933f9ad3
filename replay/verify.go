package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"dshmem/events"
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
	// Behind lists the streams the live index had not folded to the end
	// of the log: the root was compared with the replay of what it had
	// folded. Beside a writer that is what the writer has not folded
	// yet; with none, the tail a crash left between an append and its
	// fold, which the next writer's open folds. The caller decides
	// whether it is a difference.
	Behind []Lag
	// Moved names, when it is not empty, a stream the live index folded
	// further while Verify ran: a writer changed the root during the
	// comparison, and a difference may be only that.
	Moved string
	// Vectors, with Options.Vectors, says how the live index's vectors
	// compare with the rebuilt ones: rows made from the same text must be
	// equal byte for byte (the encoder is deterministic; a row that
	// differs is a Difference); rows only one side has are counted here
	// (a live fill not finished yet, or not run since a change).
	Vectors string
}

// VerifyOptions configure Verify. The zero value works.
type VerifyOptions struct {
	Options
	// Keep leaves the rebuilt root on disk (its path is in the report).
	Keep bool
	// Folded is what the live index had folded (its cursors), read
	// before log was opened, so that a writer appending in between
	// cannot make the index look ahead of the log. Nil: read the cursors
	// when Verify starts (a root nothing writes meanwhile).
	Folded map[string]uint64
}

// Verify rebuilds root's log aside, in a new temporary directory, up to
// the seqs the live index had folded, and compares the live root with it
// byte for byte: every projection file (present in one and not the
// other, or different), projector.Dump of the live index (live) against
// the rebuilt one, and projector.DumpFiles (what the files table says
// was written, and the seq each reflects). A stream the index folded
// past the end of the log is a difference; one it has not folded to the
// end is reported in Behind.
//
// Verify only reads root, log and live, so it may run beside the
// root's writer (with a read-only log and index): it compares the
// prefix the index held when it started, and Moved says if the index
// went on folding while it ran. live may be nil (the root has no
// index): the index is then a difference and the whole log is replayed.
func Verify(ctx context.Context, log Log, root string, live *sqlstore.Store, opts VerifyOptions) (VerifyReport, error) {
	folded := opts.Folded
	if folded == nil && live != nil {
		var err error
		if folded, err = live.Cursors(); err != nil {
			return VerifyReport{}, fmt.Errorf("verify: %w", err)
		}
	}
	src := log
	var rep VerifyReport
	var ahead []Difference
	if live != nil {
		upTo := map[string]uint64{}
		for _, lag := range Lags(log, folded) {
			if lag.Folded > lag.Logged {
				ahead = append(ahead, Difference{Path: IndexFile, Problem: fmt.Sprintf("ahead of the log: stream %s is folded up to seq %d, but the log ends at seq %d (events were cut out of the log; the next writer to open the root rebuilds the index)", lag.Stream, lag.Folded, lag.Logged)})
			} else {
				rep.Behind = append(rep.Behind, lag)
			}
		}
		for _, s := range log.Streams() {
			upTo[s] = min(folded[s], log.LastSeq(s))
		}
		src = prefix{log, upTo}
	}
	dir, err := os.MkdirTemp("", "dshmem-verify-")
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	rep.Dir = dir
	if !opts.Keep {
		defer os.RemoveAll(dir)
	}
	rep.Stats, err = Rebuild(ctx, src, dir, opts.Options)
	if err != nil {
		return rep, err
	}
	diffs, n, err := CompareFiles(root, dir)
	if err != nil {
		return rep, err
	}
	rep.Files = n
	rep.Differences = append(diffs, ahead...)
	if live == nil {
		rep.Differences = append(rep.Differences, Difference{Path: IndexFile, Problem: "missing from the live root (the log makes it)"})
		return rep, nil
	}
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
	if opts.Vectors != nil {
		d, note, err := compareVectors(ctx, live, st)
		if err != nil {
			return rep, fmt.Errorf("verify: %w", err)
		}
		rep.Differences = append(rep.Differences, d...)
		rep.Vectors = note
	}
	now, err := live.Cursors()
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	for _, s := range slices.Sorted(maps.Keys(now)) {
		if now[s] != folded[s] {
			rep.Moved = fmt.Sprintf("stream %s was folded up to seq %d when verify started and up to seq %d when it ended", s, folded[s], now[s])
			break
		}
	}
	return rep, nil
}

// Lag is a stream whose index and log end at different seqs.
type Lag struct {
	Stream string
	Folded uint64 // the index's cursor: the last seq it folded
	Logged uint64 // the log's last seq
}

func (l Lag) String() string {
	return fmt.Sprintf("stream %s is folded up to seq %d, the log ends at seq %d", l.Stream, l.Folded, l.Logged)
}

// Lags compares an index's cursors (folded) with the log, stream by
// stream in name order, and returns every stream where they differ:
// behind (Folded < Logged) or ahead of the log.
func Lags(log Log, folded map[string]uint64) []Lag {
	streams := slices.Concat(log.Streams(), slices.Collect(maps.Keys(folded)))
	slices.Sort(streams)
	var out []Lag
	for _, s := range slices.Compact(streams) {
		if f, l := folded[s], log.LastSeq(s); f != l && !(f < l && lost(log, s, f+1, l)) {
			out = append(out, Lag{Stream: s, Folded: f, Logged: l})
		}
	}
	return out
}

// prefix is a Log cut, stream by stream, at the seqs of upTo (a stream
// not in it is left out): the part of a log an index had folded.
type prefix struct {
	log  Log
	upTo map[string]uint64
}

func (p prefix) Streams() []string {
	var out []string
	for _, s := range p.log.Streams() {
		if p.LastSeq(s) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func (p prefix) LastSeq(stream string) uint64 {
	return min(p.log.LastSeq(stream), p.upTo[stream])
}

var errPrefixEnd = errors.New("end of the prefix")

func (p prefix) Scan(stream string, fromSeq uint64, fn func(events.Envelope) error) error {
	last := p.LastSeq(stream)
	if last == 0 {
		return nil
	}
	err := p.log.Scan(stream, fromSeq, func(ev events.Envelope) error {
		if ev.Seq > last {
			return errPrefixEnd
		}
		return fn(ev)
	})
	if errors.Is(err, errPrefixEnd) {
		return nil
	}
	return err
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

// Lost forwards to the log's Lost (a salvaged stream's gaps), if it has one.
func (p prefix) Lost(stream string, first, last uint64) bool {
	return lost(p.log, stream, first, last)
}

// lost says whether seqs first..last of stream are lost to damage (a
// salvage's gap at the end of the stream): no fold can reach them, so an
// index folded up to first-1 is not behind.
func lost(log Log, stream string, first, last uint64) bool {
	l, ok := log.(interface {
		Lost(stream string, first, last uint64) bool
	})
	return ok && l.Lost(stream, first, last)
}
