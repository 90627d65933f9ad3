package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// denseModel is the installed sentence encoder; CI installs it
// (DSHMEM_MODELS), so there its absence fails the test.
func denseModel(t *testing.T) *vectors.Model {
	t.Helper()
	m, err := vectors.LoadInstalled(false)
	require.NoError(t, err)
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the sentence encoder is needed in CI (dshmem model install; DSHMEM_MODELS)")
		t.Skip("the sentence encoder is not installed (dshmem model install)")
	}
	return m
}

// The root of the tests below: bulk episodes in the workspace, each with
// a stand-in vector (a random unit vector, FillOptions.Encode), then an
// English message there and two English entries (one there, one global)
// whose vectors the model made. The query shares no word with the
// message or the first entry (denseText): only its meaning finds them.
const (
	denseCwd     = "/home/u/proj"
	denseQuery   = "shipping updates to production"
	denseText    = "We deploy the service with blue-green releases behind the load balancer"
	denseMessage = "d:msg" // the event id of the message of denseText
	denseEpisode = 200     // the bulk episodes: over the test's limit
	denseLimit   = 50      // cliMaxVectors in these tests
)

// denseRoot builds that root and returns it with the id of the entry of
// denseText.
func denseRoot(t *testing.T, m *vectors.Model) (root, id string) {
	t.Helper()
	ctx := context.Background()
	root = t.TempDir()
	var in strings.Builder
	fmt.Fprintf(&in, `{"id":"d:0","type":"session/start","time":"2026-08-18T10:00:00Z","session":"s1","cwd":%q,"data":{"origin":"top"}}`+"\n", denseCwd)
	for i := range denseEpisode {
		fmt.Fprintf(&in, `{"id":"d:%d","type":"user/message","time":"2026-08-18T10:00:01Z","session":"s1","data":{"text":"record %d about the build"}}`+"\n", i+1, i)
	}
	code, _, errs := cli(t, in.String(), "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: %s", errs)
	fill := func(m *vectors.Model, o vectors.FillOptions) vectors.FillReport {
		eng, err := observer.Open(ctx, root, observer.Options{})
		require.NoError(t, err)
		defer eng.Close()
		rep, err := vectors.Fill(ctx, eng.Store(), m, o)
		require.NoError(t, err)
		return rep
	}
	r := rand.New(rand.NewPCG(7, 8))
	rep := fill(nil, vectors.FillOptions{Encode: func(string) []float32 { return standIn(r) }})
	require.Equal(t, denseEpisode, rep.Encoded, "stand-in vectors")
	msg := fmt.Sprintf(`{"id":%q,"type":"user/message","time":"2026-08-18T10:00:02Z","session":"s1","data":{"text":%q}}`, denseMessage, denseText)
	code, _, errs = cli(t, msg, "--root", root, "ingest")
	require.EqualValues(t, 0, code, "ingest: %s", errs)
	code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", denseCwd, denseText)
	require.EqualValues(t, 0, code, "remember: %s", errs)
	id = strings.TrimSpace(out)
	code, _, errs = cli(t, "", "--root", root, "remember", "--global", "Answer in short sentences, the user reads on a phone")
	require.EqualValues(t, 0, code, "remember: %s", errs)
	rep = fill(m, vectors.FillOptions{})
	require.Equal(t, 3, rep.Encoded, "the vectors of the message and the entries")
	return root, id
}

// standIn is a random unit vector.
func standIn(r *rand.Rand) []float32 {
	v := make([]float32, encoder.Dim)
	var ss float64
	for i := range v {
		x := r.NormFloat64()
		v[i], ss = float32(x), ss+x*x
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(ss))
	}
	return v
}

// limitVectors sets cliMaxVectors to n for the test.
func limitVectors(t *testing.T, n int64) {
	was := cliMaxVectors
	cliMaxVectors = n
	t.Cleanup(func() { cliMaxVectors = was })
}

// recallIDs runs recall --json with args and returns the ids found, best
// first, and stderr.
func recallIDs(t *testing.T, root string, args ...string) ([]string, string) {
	t.Helper()
	code, out, errs := cli(t, "", append([]string{"--root", root, "recall", "--json", "--cwd", denseCwd}, append(args, denseQuery)...)...)
	require.EqualValues(t, 0, code, "recall %v: %s", args, errs)
	var res recall.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	return itemIDs(res.Items), errs
}

func itemIDs(items []recall.Item) []string {
	ids := []string{}
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

// searchIDs is recallIDs for search --json.
func searchIDs(t *testing.T, root string, args ...string) ([]string, string) {
	t.Helper()
	code, out, errs := cli(t, "", append([]string{"--root", root, "search", "--json"}, append(args, denseQuery)...)...)
	require.EqualValues(t, 0, code, "search %v: %s", args, errs)
	var items []recall.Item
	require.NoError(t, json.Unmarshal([]byte(out), &items), out)
	return itemIDs(items), errs
}

// TestCLIRecallReadsTheVectorsItCanUse: a one-shot recall reads only the
// vectors of the kind it ranks in its scopes. The root holds more vectors
// than the limit (the episodes) but one entry vector, so recall (kind
// semantic) fuses the vectors and finds the English entry by meaning;
// words alone do not. Catches the mutation that limits on the whole
// index again (useEncoder's rows := st.Max).
func TestCLIRecallReadsTheVectorsItCanUse(t *testing.T) {
	m := denseModel(t)
	limitVectors(t, denseLimit)
	root, id := denseRoot(t, m)
	ids, errs := recallIDs(t, root)
	require.NotEmpty(t, ids, "recall found nothing; stderr %s", errs)
	assert.Equal(t, id, ids[0], "recall by meaning: got %v; stderr %s", ids, errs)
	assert.NotContains(t, errs, "words alone", "stderr")

	t.Setenv("DSHMEM_MODELS", t.TempDir()) // no model: words alone
	ids, _ = recallIDs(t, root)
	assert.NotContains(t, ids, id, "words alone found the entry: the test shows nothing")
}

// TestCLIRecallAboveTheLimit: a recall or search that would read more
// vectors than the limit (here the episodes') is sent to the server
// holding the root, which answers with its loaded vectors (the message
// found by meaning), printed as the local path prints its answer; without
// a server it uses words alone and says what to do. ServerAnswers catches
// the mutation that never asks the server (useEncoder returns nil
// instead of cl); NoServer the one that reads over the limit (the
// rows > cliMaxVectors test dropped); ServerAnswers also the one that
// leaves the session out of the request (nothing recorded as shown).
func TestCLIRecallAboveTheLimit(t *testing.T) {
	m := denseModel(t)
	limitVectors(t, denseLimit)
	root, id := denseRoot(t, m)
	over := fmt.Sprintf("would read %d vectors", denseEpisode+1)
	t.Run("NoServer", func(t *testing.T) {
		ids, errs := recallIDs(t, root, "--kind", "episodic")
		assert.NotContains(t, ids, denseMessage, "recall --kind episodic over the limit used the vectors")
		for _, want := range []string{"this recall " + over, "words alone", "'dshmem serve'"} {
			assert.Contains(t, errs, want, "recall stderr")
		}
		ids, errs = searchIDs(t, root)
		assert.NotContains(t, ids, denseMessage, "search over the limit used the vectors")
		assert.Contains(t, errs, "this search "+over, "search stderr")
		// A Chinese query is never encoded: no count, no note.
		code, _, errs := cli(t, "", "--root", root, "recall", "--cwd", denseCwd, "--kind", "episodic", "构建在迁移步骤失败")
		require.EqualValues(t, 0, code, "%s", errs)
		assert.NotContains(t, errs, "vectors", "a Chinese recall spoke of vectors")
	})
	t.Run("ServerAnswers", func(t *testing.T) {
		startInProcess(t, root, func(eng *observer.Engine) { eng.UseDense(vectors.NewDense(m)) })
		ids, errs := recallIDs(t, root, "--kind", "episodic")
		require.NotEmpty(t, ids, "recall found nothing; stderr %s", errs)
		assert.Equal(t, denseMessage, ids[0], "recall --kind episodic by the server: got %v; stderr %s", ids, errs)
		assert.Contains(t, errs, "answered by the server holding the root", "recall stderr")
		ids, errs = searchIDs(t, root)
		require.NotEmpty(t, ids, "search found nothing; stderr %s", errs)
		assert.Equal(t, denseMessage, ids[0], "search by the server: got %v; stderr %s", ids, errs)
		assert.Contains(t, errs, "answered by the server holding the root", "search stderr")

		// A session's shown entries are recorded by the server.
		ids, errs = recallIDs(t, root, "--kind", "all", "--session", "s-shown")
		require.Contains(t, ids, id, "recall --kind all --session by the server; stderr %s", errs)
		assert.NotContains(t, errs, "not recorded", "stderr")
		shown := func() bool {
			_, out, _ := cli(t, "", "--root", root, "sql", "--json", "SELECT count(*) AS n FROM shown WHERE session = 's-shown'")
			return strings.Contains(out, `"n": `) && !strings.Contains(out, `"n": 0`)
		}
		assert.Eventually(t, shown, 10*time.Second, 20*time.Millisecond, "the server recorded nothing shown to the session")
		// Under the limit too: a session's recall goes to the server, which
		// records it (it was answered here and not recorded).
		cliMaxVectors = 1 << 40
		ids, errs = recallIDs(t, root, "--kind", "all", "--session", "s-under")
		cliMaxVectors = denseLimit
		require.Contains(t, ids, id, "recall --session under the limit; stderr %s", errs)
		assert.Contains(t, errs, "answered by the server", "recall --session under the limit")
		assert.NotContains(t, errs, "not recorded", "recall --session under the limit")

		// The same output as the local path, which reads every vector
		// when the limit allows it.
		for _, args := range [][]string{
			{"recall", "--cwd", denseCwd, "--kind", "episodic"},
			{"recall", "--cwd", denseCwd, "--kind", "all", "--json"},
			{"search"},
			{"search", "--kind", "all", "--json"},
		} {
			args = append(append([]string{"--root", root}, args...), denseQuery)
			code, served, errs := cli(t, "", args...)
			require.EqualValues(t, 0, code, "%v: %s", args, errs)
			require.Contains(t, errs, "answered by the server", "%v", args)
			cliMaxVectors = 1 << 40
			code, local, errs := cli(t, "", args...)
			cliMaxVectors = denseLimit
			require.EqualValues(t, 0, code, "%v: %s", args, errs)
			require.NotContains(t, errs, "answered by the server", "%v", args)
			if strings.Contains(strings.Join(args, " "), "--json") {
				served, local = scrubScores(t, served), scrubScores(t, local)
			}
			assert.Equal(t, local, served, "%v: the server's answer prints otherwise", args)
			assert.Contains(t, served, denseMessage, "%v", args)
		}
	})
}

// scrubScores rounds the scores of a JSON answer to 3 decimals (as the
// text output prints them): the server and the command rank at
// different instants, and recency moves the last digits.
func scrubScores(t *testing.T, out string) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, y := range x {
				if f, ok := y.(float64); ok && k == "score" {
					x[k] = math.Round(f*1000) / 1000
				} else {
					x[k] = walk(y)
				}
			}
		case []any:
			for i, y := range x {
				x[i] = walk(y)
			}
		}
		return x
	}
	b, err := json.MarshalIndent(walk(v), "", "  ")
	require.NoError(t, err)
	return string(b)
}
