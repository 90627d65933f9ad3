package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/sqlstore"
)

func init() {
	register(&command{
		name:    "stats",
		summary: "streams, events, segments and bytes on disk",
		usage: `stats [--json]

Shows each stream with its events (the log's) and segments, the bytes
the log takes on disk, and the size of the index (index.db with its
WAL) with the entries and sessions it holds.

It only reads: it takes no lock and writes nothing in the root, so it
runs beside a live 'dshmem serve'. A torn tail, or events the index has
not folded yet, are told on stderr. A damaged stream is marked
QUARANTINED, with the segment and offset of its damage (--json:
"quarantined"); 'dshmem salvage STREAM' takes it out of quarantine.
`,
		run: runStats,
	})
}

type streamStats struct {
	Stream   string `json:"stream"`
	Dir      string `json:"dir"`      // the workspace's directory ("" for global, or not known)
	Archived bool   `json:"archived"` // in the recycle bin ('dshmem scopes list --archived')
	Events   uint64 `json:"events"`   // the log's last seq
	Indexed  uint64 `json:"indexed"`  // the last seq the index folded
	Segments int    `json:"segments"`
	Bytes    int64  `json:"bytes"`
	// Quarantined is set for a damaged stream: read-only until salvaged.
	Quarantined *events.Damage `json:"quarantined,omitempty"`
}

type rootStats struct {
	Root       string        `json:"root"`
	Streams    []streamStats `json:"streams"`
	Events     uint64        `json:"events"`
	Segments   int           `json:"segments"`
	LogBytes   int64         `json:"logBytes"`
	IndexBytes int64         `json:"indexBytes"`
	Entries    int64         `json:"entries"`
	Sessions   int64         `json:"sessions"`
	// Maintenance is what needs a person's attention (a backup due, old
	// session files, files over their soft limits), as the session-start
	// context reports it.
	Maintenance []string `json:"maintenance"`
	// Quarantined lists the damaged streams ('dshmem salvage STREAM').
	Quarantined []events.Damage `json:"quarantined"`
}

func runStats(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["stats"]
	fs := newFlags(c)
	asJSON := fs.Bool("json", false, "print as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	r, err := openRead(ctx, env)
	if err != nil {
		return err
	}
	defer r.Close()
	printNotes(env, r.Notes())
	st := rootStats{Root: env.root}
	dir := filepath.Join(env.root, observer.LogDir)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		ss := streamStats{Stream: e.Name(), Events: r.Log.LastSeq(e.Name()), Indexed: r.Folded[e.Name()]}
		segs, _ := filepath.Glob(filepath.Join(dir, e.Name(), "*.jsonl.zst"))
		ss.Segments = len(segs)
		if d, ok := r.Log.QuarantinedStream(e.Name()); ok {
			ss.Quarantined = &d
		}
		for _, s := range segs {
			if fi, err := os.Stat(s); err == nil {
				ss.Bytes += fi.Size()
			}
		}
		st.Streams = append(st.Streams, ss)
		st.Events += ss.Events
		st.Segments += ss.Segments
		st.LogBytes += ss.Bytes
	}
	sort.Slice(st.Streams, func(i, j int) bool { return st.Streams[i].Stream < st.Streams[j].Stream })
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(filepath.Join(env.root, sqlstore.IndexFile+suffix)); err == nil {
			st.IndexBytes += fi.Size()
		}
	}
	st.Maintenance = []string{}
	st.Quarantined = r.Log.Quarantined()
	if r.Engine != nil {
		ss, err := r.Engine.IndexStats(ctx)
		if err != nil {
			return err
		}
		st.Entries, st.Sessions = int64(ss.Entries), int64(ss.Sessions)
		if err := scopeStats(ctx, r.Engine, &st); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	index := humanBytes(st.IndexBytes)
	switch {
	case r.Unreadable != "":
		index += " (not read: " + r.Unreadable + ")"
	case r.Engine == nil:
		index = "none (no writer has built it yet)"
	}
	fmt.Fprintf(env.stdout, "root      %s\nstreams   %d\nevents    %d\nsegments  %d\nlog       %s\nindex     %s\nsessions  %d\nentries   %d\n",
		st.Root, len(st.Streams), st.Events, st.Segments, humanBytes(st.LogBytes), index, st.Sessions, st.Entries)
	if st.Events > 0 {
		fmt.Fprintf(env.stdout, "log bytes per event  %.1f\n", float64(st.LogBytes)/float64(st.Events))
	}
	if len(st.Streams) > 0 {
		fmt.Fprintln(env.stdout)
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join([]string{"STREAM", "DIRECTORY", "EVENTS", "SEGMENTS", "BYTES"}, "\t"))
		for _, s := range st.Streams {
			dir := s.Dir
			if dir == "" {
				dir = "-"
			}
			if s.Archived {
				dir += " (archived)"
			}
			if s.Quarantined != nil {
				dir += " (QUARANTINED)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", s.Stream, dir, s.Events, s.Segments, humanBytes(s.Bytes))
		}
		tw.Flush()
	}
	if len(st.Quarantined) > 0 {
		fmt.Fprintln(env.stdout, "\nquarantined (damaged; read-only until 'dshmem salvage STREAM')")
		for _, d := range st.Quarantined {
			fmt.Fprintf(termSafe(env.stdout), "  %s: %s at offset %d: %s\n", d.Stream, d.Segment, d.Offset, d.Reason)
		}
	}
	if len(st.Maintenance) > 0 {
		fmt.Fprintln(env.stdout, "\nmaintenance")
		for _, m := range st.Maintenance {
			fmt.Fprintf(env.stdout, "  %s\n", m)
		}
	}
	return nil
}

// scopeStats names each stream's directory, marks the archived ones,
// and gathers the maintenance reminders of every active scope.
func scopeStats(ctx context.Context, eng *observer.Engine, st *rootStats) error {
	dirs := map[string]string{}
	archived := map[string]bool{}
	var active []string
	for _, bin := range []bool{false, true} {
		list, err := eng.Scopes(ctx, bin)
		if err != nil {
			return err
		}
		for _, s := range list {
			dirs[s.Key], archived[s.Key] = s.Dir, s.Archived
			if !bin {
				active = append(active, s.Key)
			}
		}
	}
	for i := range st.Streams {
		s := &st.Streams[i]
		s.Dir, s.Archived = dirs[s.Stream], archived[s.Stream]
		if s.Dir == "" && s.Stream != observer.GlobalStream {
			s.Dir = eng.ScopeDir(s.Stream)
		}
	}
	if len(active) == 0 {
		active = []string{observer.GlobalStream}
	}
	seen := map[string]bool{}
	for _, scope := range active {
		ms, err := broker.Maintenance(ctx, eng, scope, time.Now())
		if err != nil {
			return err
		}
		for _, m := range ms {
			if !seen[m] {
				seen[m] = true
				st.Maintenance = append(st.Maintenance, m)
			}
		}
	}
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
