package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/httpapi"

	"github.com/stretchr/testify/require"
)

// TestCrashMatrix kills real `dshmem serve` and `dshmem ingest` processes
// with SIGKILL under a concurrent workload and checks the root after
// each kill. A serve life runs two event pushers, a memory worker
// (remember, retried remembers, forget, remembering a forgotten fact
// again, checkpoint) and a reader
// (recall, search, context, healthz) beside each other; one request in
// four is cancelled by its client right after it was sent (the batch is
// then waiting for its fsync) or cut off half-way through its body, and
// cancelled batches and remembers are sent again later. An ingest life
// pipes a few hundred lines, new and re-sent, into `dshmem ingest`.
//
// The kill is placed by the child's own signals, never a sleep: after a
// number of acknowledgements the workload saw (mode ack; the kill lands
// among the requests in flight), or when the child says READY through
// its DSHMEM_TEST_LOG_PAUSE hook, half-way through its N-th segment
// write (torn) or right after its N-th segment fsync, before anyone was
// answered (synced).
//
// After each kill: the log has only torn tails (no other problem); the
// root reopens (cutting them); every acknowledged event is in the log
// exactly once and no event more than once; every acknowledged remember
// is one entry (a retried one too), and a fact remembered again after
// its forget is at most one entry that is not forgotten; every
// acknowledged forget holds; then `dshmem verify` is clean and `dshmem replay --verify` finds the
// index and every Markdown file equal to a rebuild from the log. A
// root takes 10 lives, then a new one starts (the rebuilds stay small).
//
// 40 kills; 200 under CI=true; DSHMEM_CRASH_MATRIX_KILLS sets another
// count (the README's longer run), DSHMEM_CRASH_SEED another seed.
func TestCrashMatrix(t *testing.T) {
	kills := 40
	if os.Getenv("CI") == "true" {
		kills = 200
	}
	if s := os.Getenv("DSHMEM_CRASH_MATRIX_KILLS"); s != "" {
		var err error
		if kills, err = strconv.Atoi(s); err != nil || kills < 1 {
			t.Fatalf("DSHMEM_CRASH_MATRIX_KILLS=%q: want a positive count", s)
		}
	}
	seed := uint64(1)
	if s := os.Getenv("DSHMEM_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("DSHMEM_CRASH_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (set DSHMEM_CRASH_SEED to try another)", seed)
	bin := buildDshmem(t)
	rng := rand.New(rand.NewPCG(seed, 12))
	var st matrixStats
	var m *matrixRoot
	for k := 0; k < kills; {
		if k%10 == 0 && (m == nil || m.lives > 0) {
			m = newMatrixRoot(t, bin)
		}
		var killed bool
		if rng.IntN(5) == 0 {
			killed = m.ingestLife(t, rng, &st)
		} else {
			m.serveLife(t, rng, &st)
			killed = true
		}
		m.lives++
		m.check(t, k, &st)
		if killed {
			k++
		}
	}
	t.Logf("%d kills (%d of serve, %d of ingest; %d ingests finished before their kill point), %d roots: "+
		"%d events, %d remembers, %d forgets, %d remembers of forgotten facts acknowledged; %d requests cancelled or cut off by their client; "+
		"%d kills landed mid-write (they left a torn tail, or events durable but never answered), %d torn tails repaired",
		kills, st.serveKills, st.ingestKills, st.ingestDone, st.roots, st.events, st.remembers, st.forgets, st.renewals, st.cancelled, st.midWrite, st.torn)
	require.Greater(t, st.events, 0, "no event was ever acknowledged: the workload never got going")
	require.Greater(t, st.remembers, 0, "no remember was ever acknowledged")
	require.Greater(t, st.midWrite, 0, "no kill landed during a write")
	require.Greater(t, st.torn, 0, "no torn tail was repaired")
	require.Greater(t, st.cancelled, 0, "no request was cancelled by its client")
	if kills >= 200 {
		require.Greater(t, st.renewals, 0, "no forgotten fact was remembered again")
	}
}

type matrixStats struct {
	roots, serveKills, ingestKills, ingestDone int
	events, remembers, forgets, cancelled      int
	renewals                                   int
	midWrite, torn                             int
}

// matrixRoot is one root and what its clients were told.
type matrixRoot struct {
	bin, root string
	lives     int

	mu      sync.Mutex
	next    int          // next new event number
	acked   map[int]bool // events acknowledged
	retry   [][]int      // event batches whose answer never came
	facts   int          // next new remember
	told    map[int]bool // remembers acknowledged (by fact number)
	unsure  []int        // remembers whose answer never came
	entries []string     // entry ids acknowledged, not forgotten
	forgot  map[string]bool
	factOf  map[string]int // entry id acknowledged → its fact
	gone    []int          // facts whose entry's forget was acknowledged: to remember again
	renewed map[int]bool   // facts sent again after a forget of their entry
	wrong   []string       // answers the workload found wrong
	gaveUp  map[int]bool   // events of requests their client cancelled or cut off
	seen    map[int]bool   // events in the log at the last check
}

func newMatrixRoot(t *testing.T, bin string) *matrixRoot {
	return &matrixRoot{bin: bin, root: filepath.Join(t.TempDir(), "root"), acked: map[int]bool{},
		told: map[int]bool{}, forgot: map[string]bool{}, gaveUp: map[int]bool{}, seen: map[int]bool{},
		factOf: map[string]int{}, renewed: map[int]bool{}}
}

func matrixLine(n int) string {
	return fmt.Sprintf(`{"id":"mx:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s%d","cwd":"/mx/ws%d","data":{"text":"matrix event %d: the deploy of service %d fails at step %d"}}`,
		n, n%3, n%3, n, n%17, n%5)
}

func matrixFact(k int) string {
	return fmt.Sprintf("matrix fact %d: service %d deploys with the blue green script", k, k)
}

// batch gives the numbers of the next batch to push: a batch whose
// answer never came, sent again, or new ones.
func (m *matrixRoot) batch(rng *rand.Rand) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.retry) > 0 && rng.IntN(2) == 0 {
		b := m.retry[0]
		m.retry = m.retry[1:]
		return b
	}
	n := 1 + rng.IntN(40)
	b := make([]int, n)
	for i := range b {
		b[i] = m.next + i
	}
	m.next += n
	return b
}

// serveLife runs `dshmem serve` under the workload and kills it.
func (m *matrixRoot) serveLife(t *testing.T, rng *rand.Rand, st *matrixStats) {
	t.Helper()
	mode := []string{"ack", "ack", "torn", "synced"}[rng.IntN(4)]
	cmd := exec.Command(m.bin, "--root", m.root, "serve", "--no-watch", "--addr", "127.0.0.1:0")
	cmd.Env = os.Environ()
	if mode != "ack" {
		cmd.Env = append(cmd.Env, logPauseEnv+"="+mode+":"+strconv.Itoa(1+rng.IntN(10)))
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	signals := make(chan string, 16)
	var errText bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l := sc.Text()
			errText.WriteString(l + "\n")
			switch {
			case strings.Contains(l, "listening on"):
				signals <- "listening"
			case strings.HasPrefix(l, "READY "):
				signals <- strings.TrimPrefix(l, "READY ")
			}
		}
		close(signals)
	}()
	timeout := time.After(2 * time.Minute)
	select {
	case s, ok := <-signals:
		require.True(t, ok && s == "listening", "serve did not start: %s", errText.String())
	case <-timeout:
		cmd.Process.Kill()
		t.Fatalf("serve did not start within 2m: %s", errText.String())
	}
	info, err := httpapi.ReadServeFile(m.root)
	require.NoError(t, err)
	require.Equal(t, cmd.Process.Pid, info.PID)

	ctx, cancel := context.WithCancel(context.Background())
	acks := make(chan struct{}, 1024)
	c := &matrixClient{m: m, addr: info.Addr, token: info.Token, acks: acks, st: st}
	var wg sync.WaitGroup
	for w := range 4 {
		wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		wg.Go(func() {
			for ctx.Err() == nil {
				switch w {
				case 0, 1:
					c.push(ctx, wrng)
				case 2:
					c.memory(ctx, wrng)
				default:
					c.read(ctx, wrng)
				}
			}
		})
	}
	want := 1 + rng.IntN(4)
	got := 0
wait:
	for {
		select {
		case <-acks:
			if got++; mode == "ack" && got >= want {
				break wait
			}
		case s, ok := <-signals:
			require.True(t, ok, "serve exited by itself: %s", errText.String())
			if s == mode {
				break wait
			}
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("mode %s: no signal within 2m: %s", mode, errText.String())
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled(), "serve exited by itself: %s", errText.String())
	cancel()
	wg.Wait()
	st.serveKills++
}

// ingestLife pipes new and re-sent lines into `dshmem ingest` and kills
// it at its pause point; it reports whether it was killed (an ingest
// that finished first acknowledged all its lines).
func (m *matrixRoot) ingestLife(t *testing.T, rng *rand.Rand, st *matrixStats) bool {
	t.Helper()
	var nums []int
	for range 1 + rng.IntN(3) {
		nums = append(nums, m.batch(rng)...)
	}
	var in strings.Builder
	for _, n := range nums {
		in.WriteString(matrixLine(n) + "\n")
	}
	mode := []string{"torn", "synced"}[rng.IntN(2)]
	cmd := exec.Command(m.bin, "--root", m.root, "ingest")
	cmd.Env = append(os.Environ(), logPauseEnv+"="+mode+":"+strconv.Itoa(1+rng.IntN(2)))
	cmd.Stdin = strings.NewReader(in.String())
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var errText strings.Builder
	sc := bufio.NewScanner(stderr)
	ready := false
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
		if sc.Text() == "READY "+mode {
			ready = true
			break
		}
	}
	if !ready { // it finished before its pause point: all acknowledged
		require.NoError(t, cmd.Wait(), "ingest: %s %s", out.String(), errText.String())
		var res observer.IngestResult
		require.NoError(t, json.Unmarshal(out.Bytes(), &res), "%s", out.String())
		require.Equal(t, len(nums), res.Appended+res.Duplicates, "ingest answered %+v for %d lines", res, len(nums))
		m.mu.Lock()
		for _, n := range nums {
			m.acked[n] = true
		}
		m.mu.Unlock()
		st.events += len(nums)
		st.ingestDone++
		return false
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	m.mu.Lock()
	m.retry = append(m.retry, nums)
	m.mu.Unlock()
	st.ingestKills++
	return true
}

// check reopens the root after a kill and checks it against what the
// clients were told.
func (m *matrixRoot) check(t *testing.T, k int, st *matrixStats) {
	t.Helper()
	if _, err := os.Stat(m.root); err != nil {
		return // killed before the first write
	}
	if m.lives == 1 {
		st.roots++
	}
	problems, err := events.Verify(filepath.Join(m.root, observer.LogDir))
	require.NoError(t, err)
	for _, p := range problems {
		require.True(t, p.Repairable, "kill %d: a problem other than a torn tail: %v", k, p)
	}
	ctx := context.Background()
	eng, err := observer.Open(ctx, m.root, observer.Options{})
	require.NoError(t, err, "kill %d: reopen", k)
	repaired := len(eng.Repairs()) > 0
	require.Equal(t, len(problems) > 0, repaired, "kill %d: verify found %v, the open repaired %v", k, problems, eng.Repairs())
	seen := map[int]int{}
	lg := eng.Log()
	for _, s := range lg.Streams() {
		require.NoError(t, lg.Scan(s, 1, func(e events.Envelope) error {
			if n, ok := strings.CutPrefix(e.ID, "mx:"); ok {
				i, err := strconv.Atoi(n)
				if err != nil {
					return fmt.Errorf("unexpected id %q", e.ID)
				}
				seen[i]++
			}
			return nil
		}), "kill %d: scan", k)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	require.Empty(t, m.wrong, "kill %d: wrong answers", k)
	// unanswered: the killed life made these durable and nobody was
	// told (its client did not give up on them): the kill took the answer.
	unanswered := false
	for n, c := range seen {
		require.EqualValues(t, 1, c, "kill %d: event mx:%d is in the log %d times", k, n, c)
		unanswered = unanswered || !m.acked[n] && !m.gaveUp[n] && !m.seen[n]
		m.seen[n] = true
	}
	for n := range m.acked {
		require.EqualValues(t, 1, seen[n], "kill %d: acknowledged event mx:%d is missing from the log", k, n)
	}
	all, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	byFact := map[string][]observer.Entry{}
	for _, en := range all {
		byFact[en.Content] = append(byFact[en.Content], en)
	}
	for f := range m.facts {
		ens := byFact[matrixFact(f)]
		live := 0
		for _, en := range ens {
			if en.Status != "forgotten" {
				live++
			}
		}
		require.LessOrEqual(t, live, 1, "kill %d: fact %d is %d entries not forgotten (a retried remember doubled): %+v", k, f, live, ens)
		if !m.renewed[f] {
			require.LessOrEqual(t, len(ens), 1, "kill %d: fact %d is %d entries (a retried remember doubled): %+v", k, f, len(ens), ens)
		}
		if m.told[f] {
			require.NotEmpty(t, ens, "kill %d: acknowledged fact %d is not an entry", k, f)
		}
	}
	for id := range m.forgot {
		en, err := eng.Entry(ctx, id)
		require.NoError(t, err, "kill %d: forgotten entry %s", k, id)
		require.Equal(t, "forgotten", en.Status, "kill %d: acknowledged forget of %s", k, id)
	}
	require.NoError(t, eng.Close())
	if unanswered || repaired {
		st.midWrite++
	}
	if repaired {
		st.torn++
	}
	for _, args := range [][]string{{"verify"}, {"replay", "--verify"}} {
		out, err := exec.Command(m.bin, append([]string{"--root", m.root}, args...)...).CombinedOutput()
		require.NoError(t, err, "kill %d: dshmem %s: %s", k, strings.Join(args, " "), out)
	}
}

// matrixClient is the workload of one serve life.
type matrixClient struct {
	m           *matrixRoot
	addr, token string
	acks        chan struct{}
	st          *matrixStats
}

func (c *matrixClient) ack() {
	select {
	case c.acks <- struct{}{}:
	default:
	}
}

// post sends body to path. With cancel set the client gives up right
// after the request is written (the server is then working on it); the
// answer is then nil. A 200 answer is decoded into out.
func (c *matrixClient) post(ctx context.Context, path, body string, cancelAfterWrite bool, out any) (int, error) {
	if cancelAfterWrite {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { cancel() }})
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+c.addr+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// cutOff sends half of a request's body and hangs up.
func (c *matrixClient) cutOff(path, body string) {
	conn, err := net.Dial("tcp", c.addr)
	if err != nil {
		return
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		path, c.addr, c.token, len(body), body[:len(body)/2])
	conn.Close()
}

func (c *matrixClient) push(ctx context.Context, rng *rand.Rand) {
	nums := c.m.batch(rng)
	lines := make([]string, len(nums))
	for i, n := range nums {
		lines[i] = matrixLine(n)
	}
	body := strings.Join(lines, "\n")
	how := rng.IntN(8)
	if how == 0 {
		c.cutOff("/v1/events", body)
	}
	var res httpapi.EventsResponse
	code, err := 0, error(nil)
	if how != 0 {
		code, err = c.post(ctx, "/v1/events", body, how == 1, &res)
	}
	if how < 2 {
		c.m.mu.Lock()
		c.st.cancelled++
		for _, n := range nums {
			c.m.gaveUp[n] = true
		}
		c.m.mu.Unlock()
	}
	if err != nil || code != http.StatusOK || res.Appended+res.Duplicates != len(nums) {
		c.m.mu.Lock()
		c.m.retry = append(c.m.retry, nums) // no answer: send it again later
		c.m.mu.Unlock()
		return
	}
	c.m.mu.Lock()
	for _, n := range nums {
		c.m.acked[n] = true
	}
	c.st.events += len(nums)
	c.m.mu.Unlock()
	c.ack()
}

func (c *matrixClient) memory(ctx context.Context, rng *rand.Rand) {
	m := c.m
	switch rng.IntN(4) {
	case 0, 1: // remember: a fact whose answer never came, or a new one
		m.mu.Lock()
		if len(m.gone) > 0 && rng.IntN(4) == 0 {
			m.mu.Unlock()
			c.renew(ctx, rng)
			return
		}
		f := m.facts
		// (A fact answered since is not sent again here: once its entry
		// is forgotten, renew sends it.)
		for len(m.unsure) > 0 && m.told[m.unsure[0]] {
			m.unsure = m.unsure[1:]
		}
		if len(m.unsure) > 0 && rng.IntN(2) == 0 {
			f, m.unsure = m.unsure[0], m.unsure[1:]
		} else {
			m.facts++
		}
		m.mu.Unlock()
		en, ok, _ := c.sendFact(ctx, rng, f)
		m.mu.Lock()
		defer m.mu.Unlock()
		if !ok {
			m.unsure = append(m.unsure, f)
			return
		}
		if !m.told[f] {
			m.told[f] = true
			m.entries = append(m.entries, en.ID)
			m.factOf[en.ID] = f
		}
		c.st.remembers++
		c.ack()
	case 2: // forget an entry that was acknowledged
		m.mu.Lock()
		if len(m.entries) == 0 {
			m.mu.Unlock()
			return
		}
		i := rng.IntN(len(m.entries))
		id := m.entries[i]
		m.mu.Unlock()
		body, _ := json.Marshal(httpapi.ForgetAPIRequest{ID: id, Reason: "crash matrix"})
		var en observer.Entry
		code, err := c.post(ctx, "/v1/forget", string(body), false, &en)
		if err == nil && (code == http.StatusOK || code == http.StatusConflict) {
			m.mu.Lock()
			if !m.forgot[id] {
				m.forgot[id] = true
				if f, ok := m.factOf[id]; ok {
					m.gone = append(m.gone, f)
				}
				c.st.forgets++
				for j, e := range m.entries {
					if e == id {
						m.entries = append(m.entries[:j], m.entries[j+1:]...)
						break
					}
				}
			}
			m.mu.Unlock()
			c.ack()
		}
	default:
		body, _ := json.Marshal(httpapi.CheckpointAPIRequest{Cwd: fmt.Sprintf("/mx/ws%d", rng.IntN(3)), Force: true})
		var res httpapi.CheckpointResponse
		c.post(ctx, "/v1/checkpoint", string(body), false, &res)
	}
}

// sendFact remembers fact f, cancelled right after it was sent one time
// in four; ok is a 200 answer, en its entry.
func (c *matrixClient) sendFact(ctx context.Context, rng *rand.Rand, f int) (en observer.Entry, ok, cancelled bool) {
	body, _ := json.Marshal(httpapi.RememberAPIRequest{Content: matrixFact(f), Cwd: fmt.Sprintf("/mx/ws%d", f%3), Type: "decision"})
	cancelled = rng.IntN(4) == 0
	code, err := c.post(ctx, "/v1/remember", string(body), cancelled, &en)
	if cancelled {
		c.m.mu.Lock()
		c.st.cancelled++
		c.m.mu.Unlock()
	}
	return en, err == nil && code == http.StatusOK, cancelled
}

// renew remembers again a fact whose entry's forget was acknowledged,
// cancelled after it was sent one time in four: it makes a new entry,
// and sent again (its answer lost) it is that entry, never a second
// one beside it (check: one entry of a fact at most is not forgotten).
func (c *matrixClient) renew(ctx context.Context, rng *rand.Rand) {
	m := c.m
	m.mu.Lock()
	i := rng.IntN(len(m.gone))
	f := m.gone[i]
	m.renewed[f] = true
	m.mu.Unlock()
	en, ok, cancelled := c.sendFact(ctx, rng, f)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !ok {
		return // sent again later, or not: either way at most one entry is live
	}
	if en.Status == "forgotten" && !cancelled {
		// Sent after the forget was answered, by a caller that waited:
		// the text is remembered anew, not answered with the forgotten.
		m.wrong = append(m.wrong, fmt.Sprintf("renewed fact %d answered with forgotten entry %s", f, en.ID))
		return
	}
	// Answered with a live entry: it can be forgotten, then renewed again.
	m.gone = append(m.gone[:i:i], m.gone[i+1:]...)
	if _, ok := m.factOf[en.ID]; !ok {
		m.factOf[en.ID] = f
		m.entries = append(m.entries, en.ID)
	}
	c.st.renewals++
	c.ack()
}

// read asks what a host asks beside the writes; the answers are not
// checked here (the reads after each kill are).
func (c *matrixClient) read(ctx context.Context, rng *rand.Rand) {
	ws := fmt.Sprintf("/mx/ws%d", rng.IntN(3))
	var v any
	switch rng.IntN(4) {
	case 0:
		c.post(ctx, "/v1/recall", fmt.Sprintf(`{"query":"deploy service","cwd":%q,"session":"s1","limit":5}`, ws), false, &v)
	case 1:
		c.post(ctx, "/v1/search", `{"query":"blue green","kind":"all","limit":5}`, false, &v)
	default:
		path := "/v1/healthz"
		if rng.IntN(2) == 0 {
			path = "/v1/context?cwd=" + ws + "&session=s1&origin=top"
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+c.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}
