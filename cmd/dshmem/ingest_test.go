package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigInput writes a JSONL file over the 8 MiB cap of one call: n events
// of ~300 bytes over two sessions, the line at bad (1-based) malformed.
func bigInput(t *testing.T, n, bad int) string {
	t.Helper()
	var b strings.Builder
	pad := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for i := 1; i <= n; i++ {
		switch {
		case i == bad:
			b.WriteString(`{"id":"big:bad","type":"user/message"` + "\n") // cut short
		case i%1000 == 1:
			fmt.Fprintf(&b, `{"id":"big:%d","type":"session/start","time":"2026-08-18T10:00:00Z","session":"s%d","cwd":"/home/u/big%d","data":{"origin":"top"}}`+"\n", i, (i-1)/1000, (i-1)/1000%2)
		default:
			fmt.Fprintf(&b, `{"id":"big:%d","type":"user/message","time":"2026-08-18T10:00:01Z","session":"s%d","data":{"text":"message %d %s"}}`+"\n", i, (i-1)/1000, i, pad)
		}
		if i%5000 == 0 {
			b.WriteString("\n") // blank lines count in the numbering
		}
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestIngestLargerThanOneCall: a file over the cap of one call is
// ingested whole, every event once, in input order (a session's cwd in
// one call resolves its messages in the next), and the bad line is
// named by its number in the whole file.
func TestIngestLargerThanOneCall(t *testing.T) {
	const n, bad = 36000, 30002 // bad is past the 30000th line, so past a blank one
	path := bigInput(t, n, bad)
	st, _ := os.Stat(path)
	require.False(t, st.Size() <= observer.MaxIngestBytes, "input is %d bytes; the test needs more than %d", st.Size(), observer.MaxIngestBytes)
	wantLine := bad + (bad-1)/5000 // the blank lines before it
	var checkIndex func(t *testing.T, eng *observer.Engine)
	check := func(t *testing.T, root string, code int, out, errs string, appended, dups int) {
		t.Helper()
		want := fmt.Sprintf(`{"appended":%d,"duplicates":%d,"rejected":1}`, appended, dups)
		require.EqualValues(t, 1, code, "exit %d, out %s, want %s; stderr %s", code, out, want, errs)
		require.Equal(t, want, strings.TrimSpace(out), "exit %d, out %s, want %s; stderr %s", code, out, want, errs)
		assert.False(t, !strings.Contains(errs, fmt.Sprintf("line %d:", wantLine)) || len(lineRE.FindAllString(errs, -1)) != 1, "stderr %q: want the one bad line named as line %d of the whole file", errs, wantLine)
		eng, err := observer.Open(context.Background(), root, observer.Options{ReadOnly: true})
		require.NoError(t, err)
		defer eng.Close()
		checkIndex(t, eng)
	}
	checkIndex = func(t *testing.T, eng *observer.Engine) {
		t.Helper()
		evs, err := eng.Store().Events(context.Background(), sqlstore.EventFilter{})
		require.NoError(t, err)
		ids := map[string]bool{}
		total, global := len(evs), 0
		for _, e := range evs {
			ids[e.ID] = true
			if e.Stream == "global" {
				global++
			}
		}
		distinct := len(ids)
		assert.False(t, total != n-1 || distinct != n-1 || global != 0, "index holds %d events (%d ids, %d in global); want %d, each once, none in global", total, distinct, global, n-1)
		// In input order: within a stream, seq follows the line number
		// in the id (big:N), across the calls the input was cut into.
		last := map[string][2]uint64{} // stream → seq, N of the event before
		slices.SortFunc(evs, func(a, b sqlstore.Event) int { return cmp.Compare(a.Seq, b.Seq) })
		for _, e := range evs {
			var num uint64
			if _, err := fmt.Sscanf(e.ID, "big:%d", &num); err != nil {
				continue // a scope/register the engine wrote
			}
			if prev, ok := last[e.Stream]; ok && num < prev[1] {
				t.Fatalf("%s: %s at seq %d after big:%d at seq %d: not in input order", e.Stream, e.ID, e.Seq, prev[1], prev[0])
			}
			last[e.Stream] = [2]uint64{e.Seq, num}
		}
	}
	t.Run("Local", func(t *testing.T) {
		root := t.TempDir()
		code, out, errs := cli(t, "", "--root", root, "ingest", path)
		check(t, root, code, out, errs, n-1, 0)
		code, out, errs = cli(t, "", "--root", root, "ingest", path)
		check(t, root, code, out, errs, 0, n-1)
	})
	t.Run("Forwarded", func(t *testing.T) {
		// Two calls in flight, on separate connections: the server keeps
		// them in the input's order.
		root := t.TempDir()
		var eng *observer.Engine
		startInProcess(t, root, func(e *observer.Engine) { eng = e })
		code, out, errs := cli(t, "", "--root", root, "ingest", path)
		require.EqualValues(t, 1, code, "exit %d, out %s, stderr %s", code, out, errs)
		require.Contains(t, errs, fmt.Sprintf("line %d:", wantLine), "exit %d, out %s, stderr %s", code, out, errs)
		require.Equal(t, fmt.Sprintf(`{"appended":%d,"duplicates":0,"rejected":1}`, n-1), strings.TrimSpace(out), "exit %d, out %s, stderr %s", code, out, errs)
		checkIndex(t, eng)
	})
}

var lineRE = regexp.MustCompile(`line [0-9]+:`)

func TestSplitCalls(t *testing.T) {
	long := `{"id":"x","data":"` + strings.Repeat("a", observer.MaxEventBytes) + `"}`
	in := "\uFEFF" + `{"id":"1"}` + "\r\n\n" + `{"id":"3"}` + "\n" + long + "\n" + `{"id":"5"}`
	var calls []observer.Call
	err := observer.SplitCalls(strings.NewReader(in), 40, 0, func(c observer.Call) error {
		calls = append(calls, c)
		return nil
	})
	require.NoError(t, err)
	var got []string
	for _, c := range calls {
		var parts []string
		for i, l := range c.Lines {
			parts = append(parts, fmt.Sprintf("%d:%d", c.Nums[i], len(l)))
		}
		got = append(got, strings.Join(parts, ","))
	}
	// 40 bytes a call: lines 1 and 3 share one; the long line, cut to
	// MaxEventBytes+1 so that Validate names the limit, goes alone.
	want := []string{"1:10,3:10", fmt.Sprintf("4:%d", observer.MaxEventBytes+1), "5:10"}
	assert.Equal(t, strings.Join(want, " "), strings.Join(got, " "), "got calls %v, want %v", got, want)
	last := calls[len(calls)-1].Read
	assert.Equal(t, int64(len(in)), last, "got %d bytes read, want %d", last, len(in))
}

// TestForwardIngestStopsAtAFailedCall: when a call of a forwarded ingest
// fails, the call in flight behind it is cancelled (the server would
// hold it waiting for the failed call's turn) and no further call is
// sent. The server here answers call 1 with 503 once call 2 is waiting.
func TestForwardIngestStopsAtAFailedCall(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	second := make(chan struct{})
	cancelled := make(chan bool, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := r.Header.Get(httpapi.HeaderIngestCall)
		mu.Lock()
		calls[n]++
		mu.Unlock()
		switch n {
		case "1":
			select {
			case <-second:
			case <-time.After(30 * time.Second):
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"code":"unavailable","message":"the index broke"}}`)
		case "2":
			close(second)
			select {
			case <-r.Context().Done():
				cancelled <- true
			case <-time.After(30 * time.Second):
				cancelled <- false
			}
			w.WriteHeader(http.StatusConflict)
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	root := t.TempDir()
	require.NoError(t, httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: strings.TrimPrefix(srv.URL, "http://"), PID: os.Getpid(), Token: "t"}))
	var in strings.Builder
	for i := range 3*observer.DefaultCallLines + 1 { // four calls
		fmt.Fprintf(&in, `{"id":"f:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/w","data":{"text":"x"}}`+"\n", i)
	}
	var out, errb bytes.Buffer
	env := &cliEnv{root: root, stdout: &out, stderr: &errb}
	err := forwardIngest(context.Background(), env, &observer.LockedError{Root: root, PID: os.Getpid()}, strings.NewReader(in.String()), "input", 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the index broke")
	assert.True(t, <-cancelled, "call 2 waited out its 30 s instead of being cancelled")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[string]int{"1": 1, "2": 1}, calls, "calls the server saw")
	assert.Empty(t, out.String(), "nothing was appended, so no summary")
}
