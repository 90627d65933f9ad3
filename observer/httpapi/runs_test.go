package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runBody is a JSONL call of n events of session s in /w, ids prefix-0…
func runBody(t *testing.T, prefix string, n int) []byte {
	var b bytes.Buffer
	for i := range n {
		line, err := json.Marshal(event(fmt.Sprintf("%s-%d", prefix, i), "user/message", "s", "/w", map[string]any{"text": "hello " + prefix}))
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// postRun sends body as call n of run (header values as given).
func (ts *testServer) postRun(run, call string, body []byte) (int, EventsResponse, []byte) {
	req, err := http.NewRequest(http.MethodPost, ts.url+"/v1/events", bytes.NewReader(body))
	require.NoError(ts.t, err)
	req.Header.Set("Authorization", "Bearer "+ts.token)
	if run != "" {
		req.Header.Set(HeaderIngestRun, run)
	}
	if call != "" {
		req.Header.Set(HeaderIngestCall, call)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(ts.t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(ts.t, err)
	var er EventsResponse
	if resp.StatusCode == http.StatusOK {
		require.NoError(ts.t, json.Unmarshal(out, &er))
	}
	return resp.StatusCode, er, out
}

// waiting reports whether run's call whose turn it is, is call.
func (ts *testServer) waiting(run string, call int) bool {
	rs := &ts.srv.runs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.runs[run]
	return ok && r.next == call
}

// TestIngestRunOrder: a run's calls are queued in their numbers' order,
// whatever order they arrive in, so the log holds the input in order.
func TestIngestRunOrder(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	type answer struct {
		code int
		resp EventsResponse
	}
	second := make(chan answer, 1)
	go func() {
		code, resp, _ := ts.postRun("r1", "2", runBody(t, "b", 20))
		second <- answer{code, resp}
	}()
	// Call 2 has arrived once the run exists (its turn is call 1's).
	require.Eventually(t, func() bool { return ts.waiting("r1", 1) }, 10*time.Second, time.Millisecond, "call 2 never reached the server")
	select {
	case a := <-second:
		t.Fatalf("call 2 was answered before call 1 was sent: %+v", a)
	default:
	}
	code, first, out := ts.postRun("r1", "1", runBody(t, "a", 20))
	require.Equal(t, http.StatusOK, code, "%s", out)
	a := <-second
	require.Equal(t, http.StatusOK, a.code)
	require.Equal(t, 20, first.Appended)
	require.Equal(t, 20, a.resp.Appended)
	stream := first.Results[0].Stream
	for _, r := range first.Results {
		assert.Equal(t, stream, r.Stream)
		for _, r2 := range a.resp.Results {
			assert.Less(t, r.Seq, r2.Seq, "call 1's %s is after call 2's %s in the log", r.ID, r2.ID)
		}
	}

	// Sent again, a call whose turn has passed goes at once (a duplicate).
	code, again, out := ts.postRun("r1", "1", runBody(t, "a", 20))
	require.Equal(t, http.StatusOK, code, "%s", out)
	assert.Equal(t, 20, again.Duplicates)

	// A call refused after its turn came lets the next one go.
	code, _, out = ts.postRun("r2", "1", []byte("[{"))
	require.Equal(t, http.StatusBadRequest, code, "%s", out)
	code, _, out = ts.postRun("r2", "2", runBody(t, "c", 3))
	require.Equal(t, http.StatusOK, code, "%s", out)
}

func TestIngestRunHeaders(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	body := runBody(t, "x", 1)
	const badRun, badCall = HeaderIngestRun + " must be 1..64 characters", "must be the call's number in its run"
	for _, tc := range []struct{ run, call, names string }{
		{"r", "", badCall},
		{"", "1", badRun},
		{"r", "0", badCall},
		{"r", "x", badCall},
		{string(bytes.Repeat([]byte("r"), 65)), "1", badRun},
	} {
		code, _, out := ts.postRun(tc.run, tc.call, body)
		require.Equal(t, http.StatusBadRequest, code, "run %q call %q: %s", tc.run, tc.call, out)
		assert.Equal(t, CodeBadRequest, errCode(t, out))
		assert.Contains(t, string(out), tc.names, "run %q call %q", tc.run, tc.call)
	}
	// The log took none of them.
	code, resp, out := ts.postRun("", "", body)
	require.Equal(t, http.StatusOK, code, "%s", out)
	assert.Equal(t, 1, resp.Appended)
}

func TestIngestRunTurnTimeout(t *testing.T) {
	old := runTurnWait
	runTurnWait = 200 * time.Millisecond
	t.Cleanup(func() { runTurnWait = old })
	ts := startServer(t, t.TempDir(), ServerOptions{})
	code, _, out := ts.postRun("r", strconv.Itoa(3), runBody(t, "late", 2))
	require.Equal(t, http.StatusConflict, code, "%s", out)
	assert.Equal(t, CodeConflict, errCode(t, out))
	assert.Contains(t, string(out), "call 3")
	assert.Contains(t, string(out), "never came")
	code, resp, _ := ts.postRun("", "", runBody(t, "late", 2))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2, resp.Appended, "the call that timed out wrote nothing")
}

// TestIntakeKeepsOrderAcrossCalls: of two intake calls in flight, the
// later is appended after the earlier even when it is validated first
// (a call of nearly MaxIngestBytes, then a small one that cannot join
// it).
func TestIntakeKeepsOrderAcrossCalls(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	j1, j2 := twoIntakeJobs(t)
	ts.srv.enqueue(j1)
	ts.srv.enqueue(j2)
	waitJobs(t, j1, j2)
	last := j1.outs[len(j1.outs)-1].Seq
	for _, o := range j2.outs {
		require.Greater(t, o.Seq, last, "%s was appended before the call queued ahead of it", o.ID)
	}
}

// TestIntakeObservesInOrder: the broker is given the events of two
// intake calls in flight in their order, even when the earlier call is
// slow to report after its fold (here held 100 ms), which lets the later
// one finish first.
func TestIntakeObservesInOrder(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	j1, j2 := twoIntakeJobs(t)
	var (
		mu       sync.Mutex
		observed []string // the first id of each batch the broker is given
	)
	ingested, observe := intakeIngested, intakeObserve
	t.Cleanup(func() { intakeIngested, intakeObserve = ingested, observe })
	intakeIngested = func(jobs []*intakeJob) {
		if jobs[0] == j1 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	intakeObserve = func(s *Server, evs []events.Envelope) {
		mu.Lock()
		observed = append(observed, evs[0].ID)
		mu.Unlock()
		observe(s, evs)
	}
	ts.srv.enqueue(j1)
	ts.srv.enqueue(j2)
	waitJobs(t, j1, j2)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{j1.outs[0].ID, j2.outs[0].ID}, observed)
}

// twoIntakeJobs builds two intake jobs of one session's messages that
// cannot join one call: the first just under MaxIngestBytes, the second
// 200 lines.
func twoIntakeJobs(t *testing.T) (*intakeJob, *intakeJob) {
	text := string(bytes.Repeat([]byte("word "), 320))
	lines := func(prefix string, n int) [][]byte {
		var out [][]byte
		for i := range n {
			line, err := json.Marshal(event(fmt.Sprintf("%s-%d", prefix, i), "user/message", "s", "/w", map[string]any{"text": text}))
			require.NoError(t, err)
			out = append(out, line)
		}
		return out
	}
	big, small := lines("big", 0), lines("small", 200)
	size := func(ls [][]byte) (n int) {
		for _, l := range ls {
			n += len(l)
		}
		return n
	}
	for size(big)+len(small[0]) <= observer.MaxIngestBytes { // one call, just under the cap
		big = append(big, lines(fmt.Sprintf("big%d", len(big)), 1)...)
	}
	require.Greater(t, size(big)+size(small), observer.MaxIngestBytes, "the two calls must not join")
	j1 := &intakeJob{lines: big, size: size(big), done: make(chan struct{})}
	j2 := &intakeJob{lines: small, size: size(small), done: make(chan struct{})}
	return j1, j2
}

// waitJobs waits for intake jobs and checks that each appended all its
// lines.
func waitJobs(t *testing.T, js ...*intakeJob) {
	for _, j := range js {
		<-j.done
		require.NoError(t, j.err)
		require.Equal(t, len(j.lines), j.res.Appended)
	}
}

// TestIngestRunStopping: a call waiting for its turn gives up when the
// server stops, so Shutdown does not wait for a call that never comes.
func TestIngestRunStopping(t *testing.T) {
	ts := startServer(t, t.TempDir(), ServerOptions{})
	answered := make(chan int, 1)
	go func() {
		code, _, _ := ts.postRun("r", "2", runBody(t, "x", 1))
		answered <- code
	}()
	require.Eventually(t, func() bool { return ts.waiting("r", 1) }, 10*time.Second, time.Millisecond, "call 2 never reached the server")
	ts.stop() // fails the test if Shutdown times out
	assert.Equal(t, http.StatusServiceUnavailable, <-answered)
}
