package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricsWriteTo(t *testing.T) {
	m := New()
	m.EventsAppended.Add(3)
	m.PacketsDiscarded.Add(2)
	m.Request("search", 200)
	m.Request("events", 400)
	m.Request("events", 200)
	m.Request("events", 200)
	m.Suppress("stale")
	m.Suppress("none")
	var b strings.Builder
	_, err := m.WriteTo(&b)
	require.NoError(t, err)
	text := b.String()
	t.Run("CountersOnceEach", func(t *testing.T) {
		for _, name := range []string{"dshmem_events_appended_total", "dshmem_events_duplicate_total", "dshmem_events_rejected_total",
			"dshmem_watch_events_total", "dshmem_watch_errors_total", "dshmem_packets_computed_total", "dshmem_packets_served_total",
			"dshmem_distiller_calls_total", "dshmem_distiller_failures_total", "dshmem_shown_errors_total", "dshmem_intake_calls_total",
			"dshmem_packets_discarded_total", "dshmem_packets_suppressed_total", "dshmem_http_requests_total"} {
			got := strings.Count(text, "# TYPE "+name+" counter\n")
			assert.EqualValues(t, 1, got, "%s: got %d TYPE lines, want 1", name, got)
		}
	})
	t.Run("Values", func(t *testing.T) {
		for _, want := range []string{"\ndshmem_events_appended_total 3\n", "\ndshmem_packets_discarded_total 2\n", "\ndshmem_events_rejected_total 0\n"} {
			assert.Contains(t, text, want, "got no line %q in:\n%s", strings.TrimSpace(want), text)
		}
	})
	t.Run("LabelsSorted", func(t *testing.T) {
		for _, seq := range [][]string{
			{`dshmem_packets_suppressed_total{reason="none"} 1`, `dshmem_packets_suppressed_total{reason="stale"} 1`},
			{`dshmem_http_requests_total{route="events",code="200"} 2`, `dshmem_http_requests_total{route="events",code="400"} 1`,
				`dshmem_http_requests_total{route="search",code="200"} 1`},
		} {
			last := -1
			for _, line := range seq {
				i := strings.Index(text, line+"\n")
				require.False(t, i < 0, "got line %q at %d (previous at %d), want it present and in order:\n%s", line, i, last, text)
				require.False(t, i < last, "got line %q at %d (previous at %d), want it present and in order:\n%s", line, i, last, text)
				last = i
			}
		}
	})
	t.Run("HistogramsCumulative", func(t *testing.T) {
		m.Ingest.Observe(0)
		m.Ingest.Observe(30 * time.Second) // past the last bucket: +Inf only
		b.Reset()
		m.WriteTo(&b)
		for _, want := range []string{`dshmem_ingest_seconds_bucket{le="0.0005"} 1`, `dshmem_ingest_seconds_bucket{le="10"} 1`,
			`dshmem_ingest_seconds_bucket{le="+Inf"} 2`, "dshmem_ingest_seconds_count 2", "dshmem_ingest_seconds_sum 30\n"} {
			assert.Contains(t, b.String(), want, "got no %q in:\n%s", want, b.String())
		}
	})
}
