package observer_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/internal/enginetest"
	"dshmem/projector"
	"dshmem/replay"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vectorModel is the installed sentence encoder; CI installs it, so
// there its absence fails the test instead of skipping it.
func vectorModel(t *testing.T) *vectors.Model {
	t.Helper()
	m, err := vectors.LoadInstalled(false)
	require.NoError(t, err)
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the sentence encoder is needed in CI (dshmem model install; DSHMEM_MODELS)")
		t.Skip("the sentence encoder is not installed (dshmem model install)")
	}
	return m
}

// vectorFixture gives eng the same English and Chinese entries and
// messages in a workspace and the global scope (fixed event ids, so two
// roots hold the same events).
func vectorFixture(t *testing.T, eng *observer.Engine) (english observer.Entry) {
	t.Helper()
	ctx := context.Background()
	var lines [][]byte
	for i, r := range []struct{ cwd, content string }{
		{"/home/u/proj", "We deploy the service with blue-green releases behind the load balancer"},
		{"/home/u/proj", "数据库迁移之前一定要先备份"},
		{"", "Answer in short sentences, the user reads on a phone"},
		{"/home/u/proj", "我们用 pnpm 管理依赖"},
	} {
		cwd := ""
		if r.cwd != "" {
			cwd = fmt.Sprintf(`,"cwd":%q`, r.cwd)
		}
		lines = append(lines, []byte(fmt.Sprintf(`{"id":"mem:%d","type":"memory/remember","time":"2026-08-18T10:00:00Z"%s,"data":{"content":%q}}`, i, cwd, r.content)))
	}
	enginetest.Ingest(t, eng, lines)
	enginetest.Ingest(t, eng, enginetest.Conv("s1", "/home/u/proj", "the nightly job runs out of memory when it parses the logs"))
	enginetest.Ingest(t, eng, enginetest.Conv("s2", "/home/u/proj", "夜间任务解析日志时内存不够"))
	es, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	for _, e := range es {
		if strings.HasPrefix(e.Content, "We deploy") {
			return e
		}
	}
	t.Fatal("no English entry")
	return observer.Entry{}
}

func vectorDump(t *testing.T, s *sqlstore.Store) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, s.DumpVectors(context.Background(), &b))
	return b.Bytes()
}

// TestVectorsProjection: a root whose server has the encoder gets
// vectors of its English entries and messages (and of nothing Chinese)
// in the background; everything else of it — every index table, every
// projection file, every Chinese ranking — equals a root without the
// model, which has no vector at all. The replay's vectors equal the
// live ones byte for byte (the forward pass is deterministic); a
// forgotten entry loses its vector, a purged scope all of its own.
func TestVectorsProjection(t *testing.T) {
	m := vectorModel(t)
	ctx := context.Background()
	rootA, rootB := t.TempDir(), t.TempDir()
	a := openEngine(t, rootA)
	b := openEngine(t, rootB)
	a.StartVectors(vectors.NewDense(m), 1)
	enA := vectorFixture(t, a)
	vectorFixture(t, b)
	require.NoError(t, a.VectorsIdle(ctx))
	require.NoError(t, a.VectorsError())

	entries, episodes, notEnglish, err := a.Store().VectorCounts(ctx)
	require.NoError(t, err)
	// English: 2 entries; the user lines and "Noted." twice (episodes).
	assert.EqualValues(t, 2, entries, "entries with a vector")
	assert.EqualValues(t, 3, episodes, "episodes with a vector")
	assert.EqualValues(t, 2, notEnglish, "Chinese entries marked without one")
	e, ep, ne, err := b.Store().VectorCounts(ctx)
	require.NoError(t, err)
	assert.Zero(t, e+ep+ne, "the root without the model has vector rows")

	t.Run("SameIndexAndFiles", func(t *testing.T) {
		require.NoError(t, a.WriteFiles(ctx))
		require.NoError(t, b.WriteFiles(ctx))
		var da, db bytes.Buffer
		require.NoError(t, projector.Dump(ctx, a.Store(), &da))
		require.NoError(t, projector.Dump(ctx, b.Store(), &db))
		assert.Equal(t, db.String(), da.String(), "the index beside the vectors differs from the root without the model")
		diffs, n, err := replay.CompareFiles(rootB, rootA)
		require.NoError(t, err)
		assert.Empty(t, diffs, "projection files differ (of %d)", n)
		assert.Positive(t, n)
	})

	t.Run("ChineseRankedAlike", func(t *testing.T) {
		for _, q := range []recall.Query{
			{Text: "数据库备份", Kind: recall.KindAll, NoFloor: true, Bytes: -1},
			{Text: "日志 内存", Kind: recall.KindEpisodic, NoFloor: true, Bytes: -1},
			{Text: "依赖", Kind: recall.KindSemantic},
		} {
			// No 250 ms deadline: at load 15 a cut recall finds nothing.
			q.Now, q.Timeout = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), 10*time.Second
			ra, err := a.Recall(ctx, q)
			require.NoError(t, err)
			rb, err := b.Recall(ctx, q)
			require.NoError(t, err)
			assert.Equal(t, rb.Items, ra.Items, "%q with the model: got %v, want %v", q.Text, ra.Items, rb.Items)
			assert.NotEmpty(t, ra.Items, "%q found nothing", q.Text)
		}
	})

	t.Run("EnglishFindsByMeaning", func(t *testing.T) {
		// No word of the query is in the entry; only its meaning is.
		q := recall.Query{Text: "shipping updates to production", Scopes: []string{observer.StreamForCwd("/home/u/proj")}, Timeout: 10 * time.Second}
		ra, err := a.Recall(ctx, q)
		require.NoError(t, err)
		require.NotEmpty(t, ra.Items, "with the model: nothing found")
		assert.Equal(t, enA.ID, ra.Items[0].ID, "with the model: got %v", ra.Items)
		rb, err := b.Recall(ctx, q)
		require.NoError(t, err)
		for _, it := range rb.Items {
			assert.NotEqual(t, enA.ID, it.ID, "without the model the words alone found it: the test shows nothing")
		}
	})

	t.Run("ReplayEqual", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "replay")
		st, err := replay.Rebuild(ctx, a.Log(), dir, replay.Options{Vectors: m, VectorWorkers: 2})
		require.NoError(t, err)
		assert.Equal(t, 5, st.Vectors)
		rs, err := sqlstore.Open(filepath.Join(dir, sqlstore.IndexFile))
		require.NoError(t, err)
		defer rs.Close()
		live := vectorDump(t, a.Store())
		assert.Equal(t, string(live), string(vectorDump(t, rs)), "replayed vectors differ from the live ones")
		assert.Equal(t, 7, bytes.Count(live, []byte("\n")), "vector rows (5 vectors, 2 marks)")
	})

	t.Run("ForgottenLosesItsVector", func(t *testing.T) {
		_, err := a.Forget(ctx, enA.ID, "moved to canary releases")
		require.NoError(t, err)
		require.NoError(t, a.VectorsIdle(ctx))
		assert.NotContains(t, string(vectorDump(t, a.Store())), enA.ID, "the forgotten entry keeps its vector")
		e, _, _, err := a.Store().VectorCounts(ctx)
		require.NoError(t, err)
		assert.EqualValues(t, 1, e)
	})

	t.Run("PurgeDropsTheScopesVectors", func(t *testing.T) {
		key := observer.StreamForCwd("/home/u/proj")
		_, err := a.PurgeScope(ctx, key, key)
		require.NoError(t, err)
		d := string(vectorDump(t, a.Store()))
		assert.NotContains(t, d, key, "vectors of the purged scope stay")
		assert.Contains(t, d, observer.GlobalStream)
	})
}

// TestVectorsKeepToTheScopes: a recall of a workspace that holds fewer
// vectors than a scan re-ranks gets none of another workspace's
// memories, however near their vectors are to the query (the scan once
// filled its re-ranked set with them, and they became candidates). The
// workspace's own lone vector is its nearest.
func TestVectorsKeepToTheScopes(t *testing.T) {
	m := vectorModel(t)
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	eng.StartVectors(vectors.NewDense(m), 1)
	var lines [][]byte
	for i, r := range []struct{ cwd, content string }{
		{"/home/u/a", "The cat sleeps on the sofa all afternoon"},
		{"/home/u/b", "We deploy the service with blue-green releases behind the load balancer"},
		{"/home/u/b", "Production rollouts go out every Tuesday after the release review"},
	} {
		lines = append(lines, []byte(fmt.Sprintf(`{"id":"mem:%d","type":"memory/remember","time":"2026-08-18T10:00:00Z","cwd":%q,"data":{"content":%q}}`, i, r.cwd, r.content)))
	}
	enginetest.Ingest(t, eng, lines)
	require.NoError(t, eng.VectorsIdle(ctx))
	a := observer.StreamForCwd("/home/u/a")
	for _, sc := range [][]string{{a}, {a, observer.GlobalStream}} {
		res, err := eng.Recall(ctx, recall.Query{Text: "shipping updates to production", Scopes: sc, Timeout: 10 * time.Second})
		require.NoError(t, err)
		for _, it := range res.Items {
			assert.Equal(t, a, it.Scope, "scopes %v: %s %q is another workspace's", sc, it.ID, it.Text)
		}
	}
}
