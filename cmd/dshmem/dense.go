package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"
)

// A one-shot recall or search reads the sentence encoder's vectors it can
// use (those of the kinds it ranks, in its scopes) when they are few
// enough to read for one query; else it sends the query to the server
// holding the root, which keeps them loaded, or, without one, ranks by
// words alone and says so.

// cliMaxVectors is the most vector rows a one-shot recall or search reads
// for its query (counted first by CountVectors, 6 ms per 100k): about
// 0.2 s of CPU at the 0.42–0.59 s per 100k rows that BenchmarkWarm/all
// measured (sqlstore/vectors, load average 5–7; 0.79–0.96 s in the same
// runs before the read skipped the scale column and took the signs eight
// bytes at a time). A test lowers it.
var cliMaxVectors int64 = 40_000

// denseKinds are the kinds of vectors a recall or search of kind ranks.
func denseKinds(kind string) []string {
	switch kind {
	case recall.KindSemantic:
		return []string{sqlstore.VectorEntry}
	case recall.KindEpisodic:
		return []string{sqlstore.VectorEpisode}
	}
	return []string{sqlstore.VectorEntry, sqlstore.VectorEpisode}
}

// useEncoder lets eng's recall fuse the vectors of kinds in scopes (nil:
// every stream) when the model is installed and the index holds some (a
// root without either is read exactly as before, and the model is not
// even loaded). When they are more than cliMaxVectors, it returns the
// client of the server holding the root, to send the query to, or, with
// none, tells on stderr that what (recall or search) uses words alone. A
// model that does not load is told on stderr; recall then uses words
// alone. A query that is not English does nothing of this: recall never
// encodes it (it is checked before alias expansion, which keeps its
// script).
func useEncoder(ctx context.Context, env *cliEnv, eng *observer.Engine, what, query string, kinds, scopes []string) *httpapi.Client {
	if !encoder.English(query) {
		return nil
	}
	st, err := eng.Store().VectorState(ctx)
	if err != nil || st.Max == 0 {
		return nil
	}
	var rows int64
	for _, k := range kinds {
		n, err := eng.Store().CountVectors(ctx, k, scopes)
		if err != nil {
			fmt.Fprintf(env.stderr, "dshmem: %v (this %s uses words alone)\n", err, what)
			return nil
		}
		rows += n
	}
	if rows == 0 {
		return nil
	}
	if rows > cliMaxVectors {
		if cl := server(env); cl != nil {
			return cl
		}
		fmt.Fprintf(env.stderr, "dshmem: this %s would read %d vectors, too many for one command (it reads at most %d, about 0.2 s); it uses words alone. Run 'dshmem serve' (or the host plugin) on this root: it keeps the vectors loaded, and recall and search are then sent to it\n", what, rows, cliMaxVectors)
		return nil
	}
	m, err := vectors.LoadInstalled(false)
	if err != nil {
		fmt.Fprintf(env.stderr, "dshmem: %v\n", err)
		return nil
	}
	if m == nil {
		return nil
	}
	d := vectors.NewDense(m)
	if err := d.Warm(ctx, eng.Store(), kinds, scopes); err != nil {
		fmt.Fprintf(env.stderr, "dshmem: read the index's vectors: %v (this %s uses words alone)\n", err, what)
		return nil
	}
	eng.UseDense(d)
	return nil
}

// server is the client of the live `dshmem serve` holding the root, or
// nil.
func server(env *cliEnv) *httpapi.Client {
	pid := observer.HolderPID(env.root)
	if pid <= 0 {
		return nil
	}
	cl, ok := httpapi.Serving(env.root, &observer.LockedError{Root: env.root, PID: pid})
	if !ok {
		return nil
	}
	return cl
}

// askSlack is how much longer than a recall's deadline its client waits
// for the server's answer.
const askSlack = 10 * time.Second

// askServer sends a recall or search (req, to path) to the server cl and
// returns its answer, having said on stderr who answered, or nil: the
// error told on stderr, the caller answers by words alone.
func askServer(ctx context.Context, env *cliEnv, cl *httpapi.Client, path string, req any, timeout time.Duration) *recall.Result {
	cl.HTTP = &http.Client{Timeout: timeout}
	var res recall.Result
	body, err := json.Marshal(req)
	if err == nil {
		err = cl.Post(ctx, path, body, &res)
	}
	if err != nil {
		fmt.Fprintf(env.stderr, "dshmem: %v; answered here by words alone\n", err)
		return nil
	}
	fmt.Fprintf(env.stderr, "dshmem: answered by the server holding the root (pid %d, %s)\n", cl.Info.PID, cl.Info.Addr)
	return &res
}
