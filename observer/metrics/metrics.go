package metrics

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds, in seconds, of the latency
// histograms: fine below 10 ms, where the targets of the API are.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

// Histogram is a Prometheus histogram with fixed buckets. Observations
// are lock-free.
type Histogram struct {
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNs  atomic.Int64
	n      atomic.Uint64
}

func newHistogram() *Histogram {
	return &Histogram{counts: make([]atomic.Uint64, len(latencyBuckets)+1)}
}

func (h *Histogram) Observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets, s)
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
	h.n.Add(1)
}

// Metrics are the server's counters, written out in the Prometheus text
// exposition format (version 0.0.4) by WriteTo. The zero value is not
// ready: use New.
type Metrics struct {
	EventsAppended   atomic.Uint64
	EventsDuplicate  atomic.Uint64
	EventsRejected   atomic.Uint64
	WatchEvents      atomic.Uint64 // envelopes the DSH watcher sent to intake
	WatchErrors      atomic.Uint64
	PacketsServed    atomic.Uint64
	PacketsComputed  atomic.Uint64
	DistillerCalls   atomic.Uint64
	DistillerFailure atomic.Uint64
	ShownErrors      atomic.Uint64
	IntakeCalls      atomic.Uint64 // Engine.Ingest calls (joined requests count once)
	PacketsDiscarded atomic.Uint64 // packets computed for a version that moved on meanwhile
	SessionsEvicted  atomic.Uint64 // session runtimes freed because MaxSessions were live

	Ingest *Histogram // one intake call
	Recall *Histogram // one recall or search
	Packet *Histogram // one packet fetch

	mu         sync.Mutex
	suppressed map[string]uint64 // packets not served, by reason
	requests   map[requestKey]uint64
}

// requestKey counts HTTP requests by route and status code.
type requestKey struct {
	route string
	code  int
}

func New() *Metrics {
	return &Metrics{Ingest: newHistogram(), Recall: newHistogram(), Packet: newHistogram(),
		suppressed: map[string]uint64{}, requests: map[requestKey]uint64{}}
}

func (m *Metrics) Suppress(reason string) {
	m.mu.Lock()
	m.suppressed[reason]++
	m.mu.Unlock()
}

func (m *Metrics) Request(route string, code int) {
	m.mu.Lock()
	m.requests[requestKey{route, code}]++
	m.mu.Unlock()
}

// Suppressed returns how many packet fetches were answered with nothing,
// by reason.
func (m *Metrics) Suppressed() map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.suppressed)
}

// WriteTo writes every metric in the Prometheus text format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	for _, c := range []struct {
		name, help string
		v          *atomic.Uint64
	}{
		{"dshmem_events_appended_total", "Events appended to the log by this server.", &m.EventsAppended},
		{"dshmem_events_duplicate_total", "Events dropped because their id was already in the stream.", &m.EventsDuplicate},
		{"dshmem_events_rejected_total", "Events refused by intake validation.", &m.EventsRejected},
		{"dshmem_watch_events_total", "Envelopes the DSH watcher mapped from host logs and sent to intake.", &m.WatchEvents},
		{"dshmem_watch_errors_total", "Errors while following host session logs.", &m.WatchErrors},
		{"dshmem_packets_computed_total", "Active packets computed by the broker.", &m.PacketsComputed},
		{"dshmem_packets_served_total", "Active packets served to a session.", &m.PacketsServed},
		{"dshmem_distiller_calls_total", "Distiller calls (one per claimed range).", &m.DistillerCalls},
		{"dshmem_distiller_failures_total", "Distiller calls that failed.", &m.DistillerFailure},
		{"dshmem_shown_errors_total", "memory/shown events that could not be written.", &m.ShownErrors},
		{"dshmem_intake_calls_total", "Intake calls; concurrent event posts and memory/shown writes share one.", &m.IntakeCalls},
		{"dshmem_packets_discarded_total", "Packets dropped because their session moved on while they were computed.", &m.PacketsDiscarded},
		{"dshmem_sessions_evicted_total", "Session runtimes freed, least recently seen first, because the broker's cap of live sessions was reached.", &m.SessionsEvicted},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v.Load())
	}

	m.mu.Lock()
	b.WriteString("# HELP dshmem_packets_suppressed_total Packet fetches answered with nothing, by reason.\n# TYPE dshmem_packets_suppressed_total counter\n")
	for _, k := range slices.Sorted(maps.Keys(m.suppressed)) {
		fmt.Fprintf(&b, "dshmem_packets_suppressed_total{reason=%q} %d\n", k, m.suppressed[k])
	}
	b.WriteString("# HELP dshmem_http_requests_total HTTP requests by route and status code.\n# TYPE dshmem_http_requests_total counter\n")
	keys := slices.SortedFunc(maps.Keys(m.requests), func(a, b requestKey) int {
		return cmp.Or(strings.Compare(a.route, b.route), cmp.Compare(a.code, b.code))
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "dshmem_http_requests_total{route=%q,code=\"%d\"} %d\n", k.route, k.code, m.requests[k])
	}
	m.mu.Unlock()

	writeHistogram(&b, "dshmem_ingest_seconds", "Latency of one intake call (validate, dedupe, append with fsync, index).", m.Ingest)
	writeHistogram(&b, "dshmem_recall_seconds", "Latency of one recall or search.", m.Recall)
	writeHistogram(&b, "dshmem_packet_fetch_seconds", "Latency of one packet fetch.", m.Packet)
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func writeHistogram(b *strings.Builder, name, help string, h *Histogram) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, le := range latencyBuckets {
		cum += h.counts[i].Load()
		fmt.Fprintf(b, "%s_bucket{le=%q} %d\n", name, formatFloat(le), cum)
	}
	cum += h.counts[len(latencyBuckets)].Load()
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n", name, cum)
	fmt.Fprintf(b, "%s_sum %s\n", name, formatFloat(float64(h.sumNs.Load())/1e9))
	fmt.Fprintf(b, "%s_count %d\n", name, cum)
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%g", f)
}
