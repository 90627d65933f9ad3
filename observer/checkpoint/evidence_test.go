package checkpoint

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/internal/enginetest"
	"dshmem/observer/metrics"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The event histories of testdata/evidence: intake lines, "#checkpoint"
// where a checkpoint runs (Force), "# …" comments, and {{entry:N}} for
// the id of the N-th entry the index holds when the line is ingested.
const evDir = "../../testdata/evidence"

var evPlaceholder = regexp.MustCompile(`\{\{entry:(\d+)\}\}`)

// evPlay ingests the history file name into eng up to its stop-th
// checkpoint marker (0: all of it), running each checkpoint and calling
// after (when not nil) with its index, from 1. It returns the lines left
// after the stop.
func evPlay(t *testing.T, eng *observer.Engine, name string, stop int, after func(n int)) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(evDir, name))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var pending, rest [][]byte
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if stop > 0 && n >= stop {
			if line != "" && !strings.HasPrefix(line, "#") {
				rest = append(rest, []byte(evResolve(t, eng, line)))
			}
			continue
		}
		switch {
		case line == "#checkpoint":
			if len(pending) > 0 {
				enginetest.Ingest(t, eng, pending)
				pending = nil
			}
			ckCheckpoint(t, eng, Request{Force: true})
			n++
			if after != nil {
				after(n)
			}
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			if evPlaceholder.MatchString(line) && len(pending) > 0 {
				enginetest.Ingest(t, eng, pending)
				pending = nil
			}
			pending = append(pending, []byte(evResolve(t, eng, line)))
		}
	}
	require.NoError(t, sc.Err())
	if len(pending) > 0 {
		enginetest.Ingest(t, eng, pending)
	}
	return rest
}

func evResolve(t *testing.T, eng *observer.Engine, line string) string {
	t.Helper()
	return evPlaceholder.ReplaceAllStringFunc(line, func(m string) string {
		i, _ := strconv.Atoi(evPlaceholder.FindStringSubmatch(m)[1])
		es, err := eng.Entries(context.Background(), observer.EntryFilter{})
		require.NoError(t, err)
		sort.SliceStable(es, func(a, b int) bool { return es[a].CreatedSeq < es[b].CreatedSeq })
		require.GreaterOrEqual(t, len(es), i, "%s: the index holds %d entries", m, len(es))
		return es[i-1].ID
	})
}

// evOnlyEntry returns the one active entry of the index.
func evOnlyEntry(t *testing.T, eng *observer.Engine) observer.Entry {
	t.Helper()
	es := ckEntries(t, eng, payload.StatusActive)
	require.Len(t, es, 1, "active entries: %+v", es)
	return es[0]
}

// TestConfidenceFromEvidence plays each confidence history: the entry's
// confidence after the first checkpoint (the distiller's 0.9), after
// the lines of the next session are folded but before its checkpoint
// (unchanged: a fold alone never moves it), and after that checkpoint
// (moved by a confidence op whose reason names the evidence). Replay of
// the log gives the same rows.
func TestConfidenceFromEvidence(t *testing.T) {
	for _, tc := range []struct {
		file   string
		want   []float64 // after each checkpoint
		reason string    // of the last version
	}{
		{"confidence-tool-failure.jsonl", []float64{0.9, 0.7}, "tool-failure"},
		{"confidence-confirmation.jsonl", []float64{0.9, 1.0}, "confirmation"},
		{"confidence-correction.jsonl", []float64{0.9, 0.6}, "correction"},
		{"confidence-reuse.jsonl", []float64{0.9, 0.9, 0.95}, "reuse"},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".jsonl"), func(t *testing.T) {
			eng := enginetest.Open(t, t.TempDir())
			var got []float64
			last := len(tc.want)
			rest := evPlay(t, eng, tc.file, last-1, func(int) { got = append(got, evOnlyEntry(t, eng).Confidence) })
			// The last session, folded without its checkpoint.
			enginetest.Ingest(t, eng, rest)
			before := evOnlyEntry(t, eng)
			assert.Equal(t, got[len(got)-1], before.Confidence, "folded without a checkpoint: got %v, want it unchanged", before.Confidence)
			ckCheckpoint(t, eng, Request{Force: true})
			after := evOnlyEntry(t, eng)
			got = append(got, after.Confidence)
			assert.InDeltaSlice(t, tc.want, got, 1e-9, "confidence after each checkpoint: got %v, want %v", got, tc.want)

			h, err := eng.History(context.Background(), after.ID)
			require.NoError(t, err)
			v := h[len(h)-1]
			assert.True(t, v.Op == payload.OpConfidence && strings.HasPrefix(v.Reason, tc.reason) && strings.Contains(v.Reason, "evidence "),
				"last version: got op %q reason %q, want a confidence op for %s naming its evidence", v.Op, v.Reason, tc.reason)
			for _, v := range h[1:] {
				assert.True(t, v.Op == payload.OpConfidence || v.Confidence == h[0].Confidence,
					"version %d (%s) changed confidence without a confidence op", v.Version, v.Op)
			}
			ckCheckReplay(t, eng)
		})
	}
}

// evStages lists the stage of every procedure of stream, oldest first.
func evStages(t *testing.T, eng *observer.Engine, stream string) string {
	t.Helper()
	ps, err := eng.Store().Procedures(context.Background(), stream)
	require.NoError(t, err)
	sort.SliceStable(ps, func(a, b int) bool { return ps[a].CreatedSeq < ps[b].CreatedSeq })
	var out []string
	for _, p := range ps {
		out = append(out, p.Stage)
	}
	return strings.Join(out, " ")
}

// TestProcedureStages plays each procedure history and checks the stages
// after each checkpoint, the stage history of the first procedure
// (every change an op with its evidence), and that replay reproduces
// the procedure tables.
func TestProcedureStages(t *testing.T) {
	for _, tc := range []struct {
		file    string
		stages  []string // after each checkpoint, each procedure's stage (oldest first)
		history []string // the first procedure's versions
	}{
		{"procedure-p1.jsonl", []string{"P0", "P1"}, []string{"P0", "P1"}},
		{"procedure-p2.jsonl", []string{"P0", "P1", "P2"}, []string{"P0", "P1", "P2"}},
		{"procedure-p3-confirmed.jsonl", []string{"P0", "P1", "P3"}, []string{"P0", "P1", "P3"}},
		{"procedure-p3-validated.jsonl", []string{"P0", "P1", "P2", "P2", "P3"}, []string{"P0", "P1", "P2", "P2", "P3"}},
		{"procedure-p4-failed.jsonl", []string{"P0", "P1", "P1", "P4"}, []string{"P0", "P1", "P1", "P4"}},
		{"procedure-p4-corrected.jsonl", []string{"P0", "P1", "P4"}, []string{"P0", "P1", "P4"}},
		{"procedure-p4-conflict.jsonl", []string{"P0", "P1", "P2", "P2", "P3",
			"P3 P0", "P3 P1", "P3 P2", "P3 P2", "P4 P3"}, []string{"P0", "P1", "P2", "P2", "P3", "P4"}},
	} {
		t.Run(strings.TrimSuffix(tc.file, ".jsonl"), func(t *testing.T) {
			eng := enginetest.Open(t, t.TempDir())
			stream := eng.Scope("/home/u/shop").Stream
			var got []string
			evPlay(t, eng, tc.file, 0, func(int) { got = append(got, evStages(t, eng, stream)) })
			assert.Equal(t, tc.stages, got, "stages after each checkpoint")

			ps, err := eng.Store().Procedures(context.Background(), stream)
			require.NoError(t, err)
			require.NotEmpty(t, ps)
			sort.SliceStable(ps, func(a, b int) bool { return ps[a].CreatedSeq < ps[b].CreatedSeq })
			h, err := eng.Store().ProcedureHistory(context.Background(), ps[0].ID)
			require.NoError(t, err)
			var hs []string
			for _, v := range h {
				hs = append(hs, v.Stage)
				assert.True(t, len(v.Evidence) > 0 && v.Reason != "", "version %d of %s: no evidence or reason: %+v", v.Version, v.ProcedureID, v)
			}
			assert.Equal(t, tc.history, hs, "stage history of %s", ps[0].ID)
			var state payload.Procedure
			require.NoError(t, json.Unmarshal([]byte(ps[0].State), &state))
			assert.Equal(t, []string{"bash go vet ./...", "bash go test ./..."}, state.Steps)
			assert.Equal(t, "run the checks before the release", state.Trigger)

			for _, other := range []string{observer.GlobalStream, eng.Scope("/home/u/other").Stream} {
				assert.Empty(t, evStages(t, eng, other), "procedures of %s: a workspace's procedure left its scope", other)
			}
			live, fresh := ckReplayDump(t, eng, "procedures", "procedure_versions")
			require.Contains(t, live, "procedure_versions\t", "the dump holds no procedure versions: the test proves nothing")
			assert.Equal(t, fresh, live, "replay differs from the live index")
		})
	}
}

// TestAliasExpandsRecall: "PG 就是 PostgreSQL" in the shop workspace
// teaches an alias (an op quoting the user's words, never an entry), so
// "PG 版本" finds the PostgreSQL entry there; the other workspace, which
// learned no alias, does not expand the query; replay agrees.
func TestAliasExpandsRecall(t *testing.T) {
	eng := enginetest.Open(t, t.TempDir())
	evPlay(t, eng, "alias-pg.jsonl", 0, nil)
	shop, other := eng.Scope("/home/u/shop").Stream, eng.Scope("/home/u/other").Stream
	ctx := context.Background()

	as, err := eng.Store().Aliases(ctx, nil)
	require.NoError(t, err)
	require.Len(t, as, 1, "aliases: %+v", as)
	assert.Equal(t, sqlstore.AliasRow{Scope: shop, Alias: "PG", Expansion: "PostgreSQL", Quote: "PG 就是 PostgreSQL",
		EventID: as[0].EventID, Evidence: []string{"s1:3"}, Seq: as[0].Seq, Time: as[0].Time}, as[0])
	for _, e := range ckEntries(t, eng, payload.StatusActive) {
		assert.NotContains(t, e.Content, "PG 就是", "the alias became an entry: %+v", e)
	}

	find := func(scope string) []string {
		res, err := eng.Recall(ctx, recallQuery("PG 版本", scope))
		require.NoError(t, err)
		require.False(t, res.Partial, "recall of PG 版本 in %s: %s", scope, res.Note)
		var out []string
		for _, it := range res.Items {
			out = append(out, it.Scope+" "+it.Text)
		}
		return out
	}
	got := find(shop)
	require.NotEmpty(t, got, "recall of PG 版本 in the shop workspace found nothing")
	assert.True(t, slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "PostgreSQL 16") }), "got %v", got)
	assert.Empty(t, find(other), "the other workspace expanded PG with the shop's alias")

	live, fresh := ckReplayDump(t, eng, "aliases")
	require.Contains(t, live, "aliases\t")
	assert.Equal(t, fresh, live)
}

func recallQuery(text, scope string) recall.Query {
	// The tests assert what is found, not how fast: no deadline cuts it.
	return recall.Query{Text: text, Scopes: []string{scope}, Timeout: time.Minute}
}

// TestActiveProcedureReachesPacket: through the real engine, the
// procedure a history made P3 reaches a packet of a new session in its
// workspace as a checklist; the one a history left at P2 does not, and
// neither reaches a session of another workspace.
func TestActiveProcedureReachesPacket(t *testing.T) {
	for _, tc := range []struct {
		file   string
		offers bool
	}{{"procedure-p3-confirmed.jsonl", true}, {"procedure-p2.jsonl", false}, {"procedure-p4-failed.jsonl", false}} {
		t.Run(strings.TrimSuffix(tc.file, ".jsonl"), func(t *testing.T) {
			eng := enginetest.Open(t, t.TempDir())
			evPlay(t, eng, tc.file, 0, nil)
			b := broker.New(eng, broker.PacketOptions{}, metrics.New(), time.Now, t.Logf)
			packet := func(session, cwd string) *broker.Packet {
				data, _ := json.Marshal(map[string]any{"text": "run the checks before the release"})
				b.Observe([]events.Envelope{{Stream: eng.Scope(cwd).Stream, Session: session, Type: events.TypeUserMessage, Data: data}})
				b.ComputeNow(context.Background(), session)
				return b.Fetch(session, 0, false, 0, false).Packet
			}
			procs := func(p *broker.Packet) (ids []string) {
				if p != nil {
					for _, e := range p.Entries {
						if e.Procedure {
							ids = append(ids, e.ID)
						}
					}
				}
				return ids
			}
			p := packet("new", "/home/u/shop")
			if tc.offers {
				require.NotNil(t, p)
				assert.Equal(t, broker.ModeChecklist, p.Mode)
				assert.Len(t, procs(p), 1, "entries %+v", p.Entries)
				assert.Contains(t, p.Text, "bash go vet ./...")
			} else {
				assert.Empty(t, procs(p), "a procedure below P3 or deprecated reached the packet")
			}
			assert.Empty(t, procs(packet("elsewhere", "/home/u/other")), "a procedure reached another workspace")
		})
	}
}

// TestAliasOnlyMessageIsNoEntry: a distiller's add resting on a message
// that says nothing but an alias is dropped (the alias is learned); an
// add resting on a message that says more keeps its entry, and the alias
// is learned from it too.
func TestAliasOnlyMessageIsNoEntry(t *testing.T) {
	for _, tc := range []struct {
		text    string
		entries int
	}{
		{"PG 就是 PostgreSQL", 0},
		{"PG 就是 PostgreSQL，replica 跑在 5433 端口，主库在 5432，备份每天凌晨三点", 1},
	} {
		eng := enginetest.Open(t, t.TempDir())
		c := &ckConv{session: "s1", cwd: "/home/u/shop"}
		enginetest.Ingest(t, eng, c.add("user: "+tc.text, "assistant: 好的。").lines)
		ckCheckpoint(t, eng, Request{Force: true, Distiller: &ckFakeDistiller{answer: ckAddFirstUser}})
		assert.Len(t, ckEntries(t, eng, payload.StatusActive), tc.entries, "%q", tc.text)
		as, err := eng.Store().Aliases(context.Background(), nil)
		require.NoError(t, err)
		assert.Len(t, as, 1, "%q: aliases %+v", tc.text, as)
	}
}
