package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/ui"
)

// The page's two hot reads at the size issue 14 names: 200 scopes and
// 50,000 entries. Run with
//
//	go test ./observer/ui -run '^$' -bench . -benchtime 300x
//
// p50-ms and p99-ms are the latency of one request through the handler
// (httptest.NewRecorder, no network); the budget is 100 ms p99.
// cpu-ms/op is the process's CPU time per request (getrusage), which a
// machine shared with other work inflates far less than wall time.
const (
	benchScopes  = 200
	benchEntries = 50_000
)

var bench struct {
	once   sync.Once
	err    error
	dir    string
	eng    *observer.Engine
	page   *ui.Page
	cookie *http.Cookie
	key    string // a workspace scope with benchEntries/benchScopes entries
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.eng != nil {
		bench.eng.Close()
	}
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchRoot builds, once per process, a root with benchScopes workspace
// scopes of benchEntries/benchScopes remembered entries each (one in ten
// forgotten), and a logged-in session on its page.
func benchRoot(b *testing.B) {
	b.Helper()
	bench.once.Do(func() { bench.err = buildBenchRoot() })
	if bench.err != nil {
		b.Fatal(bench.err)
	}
}

func buildBenchRoot() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dshmem-ui-bench-")
	if err != nil {
		return err
	}
	bench.dir = dir
	eng, err := observer.Open(ctx, dir, observer.Options{})
	if err != nil {
		return err
	}
	bench.eng = eng
	t0 := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	var lines [][]byte
	flush := func() error {
		if len(lines) == 0 {
			return nil
		}
		res, _, err := eng.Ingest(ctx, lines)
		if err == nil && res.Appended != len(lines) {
			err = fmt.Errorf("bench root: %d of %d events appended", res.Appended, len(lines))
		}
		lines = lines[:0]
		return err
	}
	for i := range benchEntries {
		scope := i % benchScopes
		at := t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		lines = append(lines, fmt.Appendf(nil, `{"id":"bench:%d","type":"memory/remember","time":%q,"cwd":"/bench/project-%03d",`+
			`"data":{"title":"Rule %d of project %d","content":"Project %d builds with target t%d and keeps its cache under .cache/%d; note %d.","tags":["bench","p%d"]}}`,
			i, at, scope, i, scope, scope, i, i, i, scope))
		if len(lines) == 2000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	es, err := eng.Entries(ctx, observer.EntryFilter{Scopes: []string{observer.StreamForCwd("/bench/project-007")}})
	if err != nil {
		return err
	}
	for i, e := range es {
		if i%10 == 0 {
			if _, err := eng.Forget(ctx, e.ID, "bench"); err != nil {
				return err
			}
		}
	}
	// Measure the reads, not the background render of 200 summaries.
	if err := eng.WriteFiles(ctx); err != nil {
		return err
	}
	bench.key = observer.StreamForCwd("/bench/project-007")
	bench.page = ui.New(eng, ui.Options{})
	link, err := bench.page.NewLink("http://127.0.0.1")
	if err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	bench.page.ServeHTTP(rec, httptest.NewRequest("GET", link.URL, nil))
	for _, c := range rec.Result().Cookies() {
		if c.Name == ui.CookieName {
			bench.cookie = c
		}
	}
	if bench.cookie == nil {
		return fmt.Errorf("bench root: login gave no cookie (%d)", rec.Code)
	}
	return nil
}

// benchGet measures GET path b.N times and reports p50 and p99.
func benchGet(b *testing.B, path string, check func(*httptest.ResponseRecorder) error) {
	benchRoot(b)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(bench.cookie)
		rec := httptest.NewRecorder()
		t0 := time.Now()
		bench.page.ServeHTTP(rec, req)
		lat = append(lat, time.Since(t0))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
		if check != nil {
			if err := check(rec); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / 1e6 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// cpuTime is the user and system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScopeList is GET /ui/api/scopes over 200 scopes.
func BenchmarkScopeList(b *testing.B) {
	benchGet(b, "/ui/api/scopes", func(rec *httptest.ResponseRecorder) error {
		if n := rec.Body.Len(); n < benchScopes*100 {
			return fmt.Errorf("scope list of %d bytes: want %d scopes", n, benchScopes)
		}
		return nil
	})
}

// BenchmarkEntriesView is GET /ui/api/scopes/{key}/entries of one scope,
// active entries and all of them.
func BenchmarkEntriesView(b *testing.B) {
	for _, status := range []string{"active", "all"} {
		b.Run(status, func(b *testing.B) {
			benchRoot(b)
			benchGet(b, "/ui/api/scopes/"+bench.key+"/entries?status="+status, nil)
		})
	}
}
