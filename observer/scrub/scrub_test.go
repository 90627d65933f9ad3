package scrub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/scrub"
	"dshmem/projector"
	"dshmem/replay"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"
)

const (
	cwd     = "/home/u/proj"
	token   = "TOKEN-zq81v" // in the forgotten entry A, its revision, and the message it came from
	token2  = "TOKEN-old7x" // in entry D, superseded by E and then forgotten
	keepTok = "KEEP-pnpm42" // in entry B, never forgotten
)

// line is one envelope for intake.
func line(id, typ, at string, data any) []byte {
	d, _ := json.Marshal(data)
	b, _ := json.Marshal(map[string]any{"v": 1, "id": id, "type": typ, "time": at, "session": "s1", "cwd": cwd, "data": json.RawMessage(d)})
	return b
}

// fixture builds a root with a forgotten entry A (remembered from a user
// message, then revised), a kept entry B, and an entry D superseded by E
// (which quotes D's words and the user's) and then forgotten. It returns
// the ids of A, B, D and E.
func fixture(t *testing.T, eng *observer.Engine) (a, b, d, e string) {
	t.Helper()
	ctx := context.Background()
	stream := observer.StreamForCwd(cwd)
	ingest := func(ls ...[]byte) {
		t.Helper()
		res, outs, err := eng.Ingest(ctx, ls)
		require.NoError(t, err)
		require.Equal(t, len(ls), res.Appended, "outcomes %+v", outs)
	}
	ingest(
		line("m1", events.TypeUserMessage, "2026-08-18T10:00:00Z", map[string]any{"text": "Remember: the deploy hint is " + token + " on the bastion"}),
		line("m2", events.TypeUserMessage, "2026-08-18T10:01:00Z", map[string]any{"text": "We use pnpm (" + keepTok + ")"}),
	)
	seqOf := func(id string) uint64 {
		var got uint64
		require.NoError(t, eng.Log().Scan(stream, 1, func(e events.Envelope) error {
			if e.ID == id {
				got = e.Seq
			}
			return nil
		}))
		require.NotZero(t, got, "no event %s", id)
		return got
	}
	ingest(line("ops1", events.TypeMemoryOps, "2026-08-18T10:02:00Z", map[string]any{
		"checkpoint": "ck-0000000000000001", "session": "s1", "from": 1, "to": 2,
		"ops": []map[string]any{
			{"op": "add", "title": "Deploy hint", "content": "The deploy hint is " + token + " on the bastion", "evidenceEventIds": []string{"m1"}, "provenance": "distiller"},
			{"op": "add", "title": "Use pnpm", "content": "Use pnpm, not npm (" + keepTok + ")", "evidenceEventIds": []string{"m2"}, "provenance": "distiller"},
			{"op": "add", "title": "Old build", "content": "Build with make " + token2 + " always", "provenance": "distiller"},
		},
	}))
	opsSeq := seqOf("ops1")
	a, b, d = projector.EntryID(stream, opsSeq, 0), projector.EntryID(stream, opsSeq, 1), projector.EntryID(stream, opsSeq, 2)
	ingest(
		line("m3", events.TypeUserMessage, "2026-08-18T10:03:00Z", map[string]any{"text": "From now on build with just"}),
		// A hand edit of the summary, as sync logs it: the entry's words
		// inside a person's file.
		line("fe1", events.TypeFileEdit, "2026-08-18T10:03:30Z", map[string]any{"path": "scopes/" + stream + "/memory_summary.md",
			"content": "# Memory\n\n### Deploy hint\nThe deploy hint is " + token + " on the bastion\n\nmy note: Build with make " + token2 + " always\n"}),
	)
	ingest(line("ops2", events.TypeMemoryOps, "2026-08-18T10:04:00Z", map[string]any{
		"checkpoint": "ck-0000000000000002", "session": "s1", "from": 3, "to": 4,
		"ops": []map[string]any{
			{"op": "revise", "targetId": a, "content": "The deploy hint is " + token + " on bastion-2"},
			{"op": "supersede", "targetId": d, "oldQuote": "make " + token2, "newQuote": "build with just",
				"title": "Build with just", "content": "Build with just", "evidenceEventIds": []string{"m3"}, "provenance": "distiller"},
		},
	}))
	e = projector.EntryID(stream, seqOf("ops2"), 1)
	_, err := eng.Forget(ctx, a, "not needed")
	require.NoError(t, err)
	_, err = eng.Forget(ctx, d, "")
	require.NoError(t, err)
	require.NoError(t, eng.WriteFiles(ctx))
	return a, b, d, e
}

func statuses(t *testing.T, eng *observer.Engine) map[string]string {
	t.Helper()
	ens, err := eng.Entries(context.Background(), observer.EntryFilter{})
	require.NoError(t, err)
	m := map[string]string{}
	for _, en := range ens {
		m[en.ID] = en.Status + "/" + en.SupersededBy + "/" + en.Supersedes + "/" + en.ConflictGroup
	}
	return m
}

// filesHolding lists the files under root whose bytes hold tok.
func filesHolding(t *testing.T, root, tok string) []string {
	t.Helper()
	var hits []string
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(tok)) {
			hits = append(hits, p)
		}
		return nil
	}))
	return hits
}

// decodedHolding lists the segments whose decoded events hold tok.
func decodedHolding(t *testing.T, root, tok string) []string {
	t.Helper()
	lg, err := events.OpenLogReadOnly(filepath.Join(root, observer.LogDir), events.Options{})
	require.NoError(t, err)
	var hits []string
	for _, s := range lg.Streams() {
		require.NoError(t, lg.Scan(s, 1, func(e events.Envelope) error {
			if bytes.Contains(e.Data, []byte(tok)) {
				hits = append(hits, fmt.Sprintf("%s seq %d", s, e.Seq))
			}
			return nil
		}))
	}
	return hits
}

func replayVerify(t *testing.T, root string) {
	t.Helper()
	ctx := context.Background()
	lg, err := events.OpenLogReadOnly(filepath.Join(root, observer.LogDir), events.Options{})
	require.NoError(t, err)
	st, err := sqlstore.OpenReadOnly(filepath.Join(root, sqlstore.IndexFile))
	require.NoError(t, err)
	defer st.Close()
	rep, err := replay.Verify(ctx, lg, root, st, replay.VerifyOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Differences, "replay --verify after the scrub")
	require.Empty(t, rep.Behind)
}

func TestRun(t *testing.T) {
	for _, sources := range []bool{false, true} {
		t.Run(fmt.Sprintf("sources=%v", sources), func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			eng, err := observer.Open(ctx, root, observer.Options{})
			require.NoError(t, err)
			a, b, d, e := fixture(t, eng)
			before := statuses(t, eng)
			require.Contains(t, before[e], payload.StatusActive)
			require.Contains(t, before[d], payload.StatusForgotten)
			require.NotEmpty(t, filesHolding(t, root, token))
			// A damaged copy sync kept of a hand-edited file.
			damaged := filepath.Join(root, "global.md.damaged")
			require.NoError(t, os.WriteFile(damaged, []byte("# notes\nThe deploy hint is "+token+" on bastion-2\nmine\n"), 0o644))

			dry, err := scrub.Run(ctx, eng, scrub.Options{DryRun: true, Sources: sources})
			require.NoError(t, err)
			require.Equal(t, 2, dry.Entries)
			require.NotZero(t, dry.Events)
			require.NotEmpty(t, filesHolding(t, root, token), "a dry run changes nothing")

			var steps []string
			rep, err := scrub.Run(ctx, eng, scrub.Options{Sources: sources, Step: func(s string) { steps = append(steps, s) }})
			require.NoError(t, err)
			require.Equal(t, dry.Events, rep.Events, "the dry run said %d events, the scrub did %d", dry.Events, rep.Events)
			require.NotEmpty(t, rep.Scrubbed)
			require.Contains(t, steps, "done")

			// Nothing else changed status: E, which superseded D quoting
			// its scrubbed words, is active, D forgotten.
			require.Equal(t, before, statuses(t, eng))
			bEntry, err := eng.Entry(ctx, b)
			require.NoError(t, err)
			require.Contains(t, bEntry.Content, keepTok)
			hist, err := eng.History(ctx, a)
			require.NoError(t, err)
			for _, v := range hist {
				require.NotContains(t, v.Content+v.Title, token)
				require.Contains(t, v.Content, scrub.Marker, "history shows the scrub")
			}
			// Still searchable: B.
			res, err := eng.Recall(ctx, recallQuery("pnpm"))
			require.NoError(t, err)
			require.NotEmpty(t, res.Items)

			// A rerun finds nothing more.
			again, err := scrub.Run(ctx, eng, scrub.Options{Sources: sources})
			require.NoError(t, err)
			require.Zero(t, again.Events)
			require.NoError(t, eng.Close())

			require.Empty(t, filesHolding(t, root, token2), "%s left on disk", token2)
			require.Empty(t, decodedHolding(t, root, token2), "%s left in a decoded event", token2)
			if sources {
				require.Empty(t, filesHolding(t, root, token), "%s left on disk", token)
				require.Empty(t, decodedHolding(t, root, token), "%s left in a decoded event", token)
			} else {
				// The message A was learnt from says it in other words
				// than A's: it is the user's, kept without --sources.
				m1 := findEvent(t, root, "m1")
				require.Equal(t, []string{fmt.Sprintf("%s seq %d", m1.Stream, m1.Seq)}, decodedHolding(t, root, token))
			}
			require.NotEmpty(t, filesHolding(t, root, keepTok), "the kept entry's text must stay")
			got, err := os.ReadFile(damaged)
			require.NoError(t, err)
			require.Equal(t, "# notes\n"+scrub.Marker+"\nmine\n", string(got), "the damaged copy keeps the person's other words")
			// Every event still decodes into its payload.
			lg, err := events.OpenLogReadOnly(filepath.Join(root, observer.LogDir), events.Options{})
			require.NoError(t, err)
			for _, s := range lg.Streams() {
				require.NoError(t, lg.Scan(s, 1, func(e events.Envelope) error {
					_, err := payload.Decode(e.Type, e.Data)
					require.NoError(t, err, "%s seq %d (%s) does not decode: %s", s, e.Seq, e.Type, e.Data)
					return nil
				}))
			}
			problems, err := events.Verify(filepath.Join(root, observer.LogDir))
			require.NoError(t, err)
			require.Empty(t, problems)
			replayVerify(t, root)

			// The source message: blanked whole with sources, kept (less
			// the entry's words) without.
			msg := findEvent(t, root, "m1")
			if sources {
				require.JSONEq(t, `{"text":"[scrubbed]"}`, string(msg.Data))
			} else {
				require.Contains(t, string(msg.Data), "Remember: the deploy hint is")
			}
			fe := string(findEvent(t, root, "fe1").Data)
			require.Contains(t, fe, `"# Memory\n\n### [scrubbed]\n[scrubbed]\n\nmy note: [scrubbed]\n"`, "the hand edit keeps its other words: %s", fe)
			// The supersede's newQuote (the user's words) is E's and stays.
			require.Contains(t, string(findEvent(t, root, "ops2").Data), "build with just")
		})
	}
}

func findEvent(t *testing.T, root, id string) events.Envelope {
	t.Helper()
	lg, err := events.OpenLogReadOnly(filepath.Join(root, observer.LogDir), events.Options{})
	require.NoError(t, err)
	var got events.Envelope
	for _, s := range lg.Streams() {
		require.NoError(t, lg.Scan(s, 1, func(e events.Envelope) error {
			if e.ID == id {
				got = e
			}
			return nil
		}))
	}
	require.NotEmpty(t, got.ID, "no event %s", id)
	return got
}

func TestRunErrHandEdit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	fixture(t, eng)
	files, err := replay.ProjectionFiles(root)
	require.NoError(t, err)
	require.NotEmpty(t, files)
	path := filepath.Join(root, "scopes", observer.StreamForCwd(cwd), "memory_summary.md")
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(orig, "\nmy own note\n"...), 0o644))
	_, err = scrub.Run(ctx, eng, scrub.Options{})
	require.ErrorIs(t, err, scrub.ErrHandEdit)
	require.Contains(t, err.Error(), "dshmem sync")
	require.NotEmpty(t, filesHolding(t, root, token), "a refused scrub changes nothing")
	_, err = os.Stat(filepath.Join(root, scrub.JournalFile))
	require.True(t, os.IsNotExist(err), "a refused scrub writes no journal")
}

func recallQuery(text string) recall.Query { return recall.Query{Text: text, Timeout: time.Minute} }

// TestRunFault fails the first rename of the log's rewrite (the FS seam
// of events): the scrub reports it, nothing is lost, the journal stays,
// and the next scrub finishes the job.
func TestRunFault(t *testing.T) {
	for _, kind := range []string{"write", "sync", "rename"} {
		ctx := context.Background()
		root := t.TempDir()
		ffs := &events.FaultFS{}
		eng, err := observer.Open(ctx, root, observer.Options{Log: events.Options{FS: ffs}})
		require.NoError(t, err)
		fixture(t, eng)
		// The log is idle now: fail its next write, sync or rename, the
		// first of the scrub's rewrite.
		writes, syncs := ffs.Counts()
		switch kind {
		case "write":
			ffs.FailWrite = writes + 1
		case "sync":
			ffs.FailSync = syncs + 1
		default:
			ffs.FailRename = 1
		}
		before := statuses(t, eng)
		var n int
		require.NoError(t, eng.Log().Scan(observer.StreamForCwd(cwd), 1, func(events.Envelope) error { n++; return nil }))
		_, err = scrub.Run(ctx, eng, scrub.Options{Sources: true})
		require.ErrorIs(t, err, events.ErrInjected, "%s: got %v", kind, err)
		require.Equal(t, before, statuses(t, eng), "a failed scrub changes no entry")
		if err := eng.Close(); err != nil {
			// The failed write was the writer's (sealing the active
			// segment): the stream's error is sticky until reopened.
			require.ErrorIs(t, err, events.ErrInjected, "%s: close: %v", kind, err)
		}
		_, err = os.Stat(filepath.Join(root, scrub.JournalFile))
		require.NoError(t, err, "the journal stays for the next scrub")

		eng, err = observer.Open(ctx, root, observer.Options{})
		require.NoError(t, err)
		var m int
		require.NoError(t, eng.Log().Scan(observer.StreamForCwd(cwd), 1, func(events.Envelope) error { m++; return nil }))
		require.Equal(t, n, m, "events lost")
		rep, err := scrub.Run(ctx, eng, scrub.Options{Sources: true})
		require.NoError(t, err)
		require.True(t, rep.Resumed)
		require.Equal(t, before, statuses(t, eng))
		require.NoError(t, eng.Close())
		require.Empty(t, filesHolding(t, root, token))
		require.Empty(t, decodedHolding(t, root, token))
		replayVerify(t, root)
	}
}

// TestRunBesideIntake scrubs while another goroutine keeps ingesting,
// as a server would: every event acknowledged is in the log and the
// index afterwards, and the root equals its replay.
func TestRunBesideIntake(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	fixture(t, eng)
	before := statuses(t, eng)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			l := line(fmt.Sprintf("live-%d", n), events.TypeUserMessage, "2026-08-18T11:00:00Z", map[string]any{"text": fmt.Sprintf("message %d during the scrub", n)})
			res, _, err := eng.Ingest(ctx, [][]byte{l})
			if err != nil || res.Appended != 1 {
				t.Errorf("ingest %d during the scrub: %+v, %v", n, res, err)
			}
			n++
		}
	}()
	_, err = scrub.Run(ctx, eng, scrub.Options{Sources: true})
	close(stop)
	n := <-done
	require.NoError(t, err)
	require.Greater(t, n, 0)
	after := statuses(t, eng)
	require.Equal(t, before, after)
	require.NoError(t, eng.WriteFiles(ctx))
	require.NoError(t, eng.Close())
	for i := 0; i < n; i++ {
		findEvent(t, root, fmt.Sprintf("live-%d", i))
	}
	require.Empty(t, filesHolding(t, root, token))
	replayVerify(t, root)
}

// TestRunKeepsLiveEntries: an entry that is not forgotten keeps its text
// even where it repeats a forgotten entry's words; a message that
// repeats them loses them.
func TestRunKeepsLiveEntries(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{})
	require.NoError(t, err)
	defer eng.Close()
	const words = "Rotate the ZX-kiwi keys monthly"
	a, err := eng.Remember(ctx, observer.RememberRequest{Cwd: cwd, Content: words})
	require.NoError(t, err)
	b, err := eng.Remember(ctx, observer.RememberRequest{Cwd: cwd, Content: "Team rule: " + words + ", and log it"})
	require.NoError(t, err)
	res, _, err := eng.Ingest(ctx, [][]byte{line("msg", events.TypeUserMessage, "2026-08-18T10:00:00Z", map[string]any{"text": "ok: " + words + "!"})})
	require.NoError(t, err)
	require.Equal(t, 1, res.Appended)
	_, err = eng.Forget(ctx, a.ID, "")
	require.NoError(t, err)
	_, err = scrub.Run(ctx, eng, scrub.Options{})
	require.NoError(t, err)
	got, err := eng.Entry(ctx, b.ID)
	require.NoError(t, err)
	require.Equal(t, "Team rule: "+words+", and log it", got.Content)
	require.Equal(t, payload.StatusActive, got.Status)
	ga, err := eng.Entry(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, scrub.Marker, ga.Content)
	require.JSONEq(t, `{"text":"ok: [scrubbed]!"}`, string(findEvent(t, root, "msg").Data))
}
