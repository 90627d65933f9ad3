package httpapi

import (
	"context"
	"strings"
	"sync"
	"testing"

	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/require"
)

// recordingIndex is the engine's index, noting the text of every recall
// the broker runs.
type recordingIndex struct {
	engineIndex
	mu      sync.Mutex
	queries []string
}

func (r *recordingIndex) Recall(ctx context.Context, q recall.Query) (*recall.Result, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q.Text)
	r.mu.Unlock()
	return r.engineIndex.Recall(ctx, q)
}

// TestBrokerSeesRedactedText: the broker is handed the envelopes intake
// appended, not the request's lines, so a credential posted in a turn
// never reaches the packet's recall query (nor the broker's ring).
func TestBrokerSeesRedactedText(t *testing.T) {
	const secret = "hunter2-Zq8vLmX3"
	root := t.TempDir()
	rec := &recordingIndex{}
	ts := startServer(t, root, ServerOptions{index: rec})
	rec.engineIndex = engineIndex{ts.eng}
	cwd := "/home/u/redact"
	ts.must(200, "POST", "/v1/events", []map[string]any{
		event("r1:0", "session/start", "r1", cwd, map[string]any{"origin": "top"}),
		event("r1:1", "user/message", "r1", "", map[string]any{"text": "the billing deploy fails; password=" + secret + " is set in the deploy config"}),
	}, nil)
	ts.srv.Broker().ComputeNow(context.Background(), "r1")
	ts.srv.Broker().Settle()
	rec.mu.Lock()
	queries := append([]string(nil), rec.queries...)
	rec.mu.Unlock()
	require.NotEqualValues(t, 0, len(queries), "the broker ran no recall for the session's turn")
	for _, q := range queries {
		require.NotContains(t, q, secret, "a recall query holds the posted secret: %q", q)
	}
	require.Contains(t, strings.Join(queries, "\n"), "billing", "got queries %q, want the turn's words in them", queries)
}
