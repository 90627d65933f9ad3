package observer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"dshmem/observer"
	"dshmem/replay"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/require"
)

// ixStep is one caller's write in indexWorkload and what it was told.
type ixStep struct {
	name string
	err  error
}

// ixRun is what indexWorkload did: each step's answer and the entries
// and events acknowledged.
type ixRun struct {
	steps    []ixStep
	entries  []string            // entry ids acknowledged
	events   map[string][]string // stream → event ids acknowledged
	faultAt  string              // the write step the fault hit
	faultErr error               // and its answer
}

// indexWorkload is a representative run of the index's writers: event
// pushes of two workspaces' sessions, remembers in a workspace and
// globally, a forget, a write of the Markdown files, a revise, a scope
// archive and a session's end.
// A remember answered with an error is sent again at once and must
// answer with its entry. f, when it fires during a step, records that
// step.
func indexWorkload(t *testing.T, eng *observer.Engine, f *sqlstore.Fault) ixRun {
	t.Helper()
	ctx := context.Background()
	run := ixRun{events: map[string][]string{}}
	step := func(name string, do func() error) {
		before := f.Fired()
		err := do()
		if f.Fired() != before && run.faultAt == "" {
			run.faultAt, run.faultErr = name, err
		}
		run.steps = append(run.steps, ixStep{name, err})
	}
	push := func(name string, lines ...string) {
		step(name, func() error {
			bs := make([][]byte, len(lines))
			for i, l := range lines {
				bs[i] = []byte(l)
			}
			res, outs, err := eng.Ingest(ctx, bs)
			if err == nil {
				require.Zero(t, res.Rejected, "%s: rejected: %+v", name, outs)
				for _, o := range outs {
					if o.Event != nil {
						run.events[o.Stream] = append(run.events[o.Stream], o.Event.ID)
					}
				}
			}
			return err
		})
	}
	for i, ws := range []string{"/home/u/alpha", "/home/u/beta"} {
		sid := fmt.Sprintf("ix%d", i)
		push("push "+sid,
			fmt.Sprintf(`{"id":"%s:0","type":"session/start","time":"2026-08-18T10:00:00Z","session":"%s","cwd":%q,"data":{"origin":"top"}}`, sid, sid, ws),
			fmt.Sprintf(`{"id":"%s:1","type":"user/message","time":"2026-08-18T10:00:01Z","session":"%s","data":{"text":"the migration of %s fails"}}`, sid, sid, ws))
	}
	rems := []observer.RememberRequest{
		{Cwd: "/home/u/alpha", Content: "Migrations run with goose, never by hand.", Type: "decision", Time: memT0},
		{Cwd: "/home/u/beta", Content: "The beta service deploys blue green.", Type: "fact", Time: memT0},
		{Content: "Answer in English.", Type: "preference", Time: memT0},
	}
	got := make([]string, len(rems))
	for i, r := range rems {
		step("remember "+r.Content, func() error {
			en, err := eng.Remember(ctx, r)
			if err != nil {
				// Sent again at once, as a client told the error
				// would: it answers with the entry, one entry.
				en, rerr := eng.Remember(ctx, r)
				require.NoError(t, rerr, "the remember sent again after %v", err)
				got[i] = en.ID
				run.entries = append(run.entries, en.ID)
				return err
			}
			got[i] = en.ID
			run.entries = append(run.entries, en.ID)
			return nil
		})
	}
	if got[1] != "" {
		step("forget", func() error { _, err := eng.Forget(ctx, got[1], "moved"); return err })
	}
	// The Markdown writer's own index writes (files written, the queue
	// taken): what serve's file writer does every second.
	step("write files", func() error { return eng.WriteFiles(ctx) })
	if got[0] != "" {
		step("revise", func() error {
			_, err := eng.Revise(ctx, got[0], observer.ReviseRequest{Title: "Migrations", Content: "Migrations run with goose; never edit the schema by hand."})
			return err
		})
	}
	step("archive scope", func() error {
		_, err := eng.ArchiveScope(ctx, observer.StreamForCwd("/home/u/beta"))
		return err
	})
	push("push ix0 end", `{"id":"ix0:2","type":"session/end","time":"2026-08-18T10:05:00Z","session":"ix0","data":{"reason":"exit"}}`)
	return run
}

// TestIndexFaultMatrix fails each write of the index in turn — every
// write statement and commit of a representative workload, through the
// sqlstore.Fault driver seam — with SQLITE_IOERR (EIO), SQLITE_FULL
// (ENOSPC), and as a partial transaction (the statement runs, the
// commit fails and rolls back). Each time: the caller whose write hit
// the fault is told, with SQLite's error; every acknowledged write is
// in the log; a remember answered with the error and sent again at once
// answers with its entry; and once the fault is gone the same engine,
// not reopened, takes writes again, its index equals a rebuild from the log and its Markdown
// files equal a replay (replay.Verify).
func TestIndexFaultMatrix(t *testing.T) {
	counter := &sqlstore.Fault{}
	var ops int
	var names []string
	{
		eng, err := observer.Open(context.Background(), t.TempDir(), observer.Options{IndexFault: counter, FilesInterval: -1})
		require.NoError(t, err)
		base := counter.Count()
		run := indexWorkload(t, eng, counter)
		for _, s := range run.steps {
			require.NoError(t, s.err, s.name)
		}
		ops = counter.Count() - base
		names = counter.Ops(base)
		require.NoError(t, eng.Close())
	}
	require.Greater(t, ops, 20, "the workload hardly writes the index")
	kinds := []struct {
		name string
		kind sqlstore.FaultKind
		code int
	}{{"EIO", sqlstore.FaultIOErr, 10}, {"ENOSPC", sqlstore.FaultFull, 13}, {"Partial", sqlstore.FaultPartial, 13}}
	cases := 0
	for _, k := range kinds {
		for at := 1; at <= ops; at++ {
			if k.kind == sqlstore.FaultPartial && names[at-1] == "COMMIT" {
				continue // the same as ENOSPC at the commit
			}
			t.Run(fmt.Sprintf("%s%d", k.name, at), func(t *testing.T) {
				ctx := context.Background()
				f := &sqlstore.Fault{}
				root := t.TempDir()
				eng, err := observer.Open(ctx, root, observer.Options{IndexFault: f, FilesInterval: -1})
				require.NoError(t, err)
				defer eng.Close()
				f.Arm(k.kind, at)
				run := indexWorkload(t, eng, f)
				if f.Fired() == "" {
					t.Skipf("write %d of %d not reached (the workload's writes vary by a few)", at, ops)
				}
				why := fmt.Sprintf("fault at %s (%s)", f.Fired(), run.faultAt)
				// The caller that hit the fault is told, with SQLite's error.
				require.Error(t, run.faultErr, "%s: the caller is told", why)
				var fe *sqlstore.FaultError
				require.True(t, errors.As(run.faultErr, &fe), "%s: got %v", why, run.faultErr)
				require.Equal(t, k.code, fe.Code, why)
				for _, s := range run.steps {
					if s.name != run.faultAt {
						require.NoError(t, s.err, "%s: step %s", why, s.name)
					}
				}
				// The fault is gone: the same engine takes writes.
				_, _, err = eng.Ingest(ctx, [][]byte{[]byte(`{"id":"ix9:0","type":"user/message","time":"2026-08-18T10:06:00Z","session":"ix9","cwd":"/home/u/alpha","data":{"text":"after the fault"}}`)})
				require.NoError(t, err, "%s: a write after the fault", why)
				// Everything acknowledged is in the index, which equals
				// the log.
				for _, id := range run.entries {
					_, err := eng.Entry(ctx, id)
					require.NoError(t, err, "%s: acknowledged entry %s", why, id)
				}
				for stream, ids := range run.events {
					held, err := eng.Store().ExistingEvents(ctx, stream, ids)
					require.NoError(t, err)
					require.Len(t, held, len(ids), "%s: acknowledged events of %s", why, stream)
				}
				require.NoError(t, eng.WriteFiles(ctx), why)
				vr, err := replay.Verify(ctx, eng.Log(), root, eng.Store(), replay.VerifyOptions{})
				require.NoError(t, err)
				require.Empty(t, vr.Differences, "%s: index and files against a replay of the log", why)
				require.Empty(t, vr.Behind, "%s: the index caught up with the log", why)
				cases++
			})
		}
	}
	t.Logf("index fault matrix: %d writes in the workload, %d cases (%s)", ops, cases, strings.Join([]string{"EIO", "ENOSPC", "Partial"}, ", "))
	require.Greater(t, cases, 2*ops, "most cases were skipped")
}

// TestRememberSentAgainAfterIndexFault: a remember whose fold failed
// (its event durable, its caller told the error) is sent again before
// any other write. The second must answer with the entry the first made
// — one entry — not refuse until some other write catches the index up.
func TestRememberSentAgainAfterIndexFault(t *testing.T) {
	ctx := context.Background()
	f := &sqlstore.Fault{}
	root := t.TempDir()
	eng, err := observer.Open(ctx, root, observer.Options{IndexFault: f, FilesInterval: -1})
	require.NoError(t, err)
	defer eng.Close()
	r := observer.RememberRequest{Cwd: "/home/u/alpha", Content: "Migrations run with goose, never by hand.", Type: "decision", Time: memT0}
	f.Arm(sqlstore.FaultFull, 1)
	_, err = eng.Remember(ctx, r)
	var fe *sqlstore.FaultError
	require.True(t, errors.As(err, &fe), "the remember is told the fold failed: %v", err)
	en, err := eng.Remember(ctx, r)
	require.NoError(t, err, "the remember sent again right after the fault")
	all, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	require.Len(t, all, 1, "one entry")
	require.Equal(t, en.ID, all[0].ID)
	require.NoError(t, eng.WriteFiles(ctx))
	vr, err := replay.Verify(ctx, eng.Log(), root, eng.Store(), replay.VerifyOptions{})
	require.NoError(t, err)
	require.Empty(t, vr.Differences)
	require.Empty(t, vr.Behind)
}
