package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/internal/enginetest"
	"dshmem/observer/metrics"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/vectors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The English pair of TestPacketWithVectors: the prompt asks what the
// memory answers and shares no word with it. The encoder rates them
// closer than the prompt and any other English memory of the scopes by
// more than 0.2 (checked by the test).
const (
	meaningMemory = "Invoices are written in euros and sent from the finance mailbox."
	meaningPrompt = "which currency do we charge customers?"
)

// TestPacketWithVectors: through the real engine and broker, a session
// whose last prompt is English gets in its packet the memory related to
// it by meaning alone when the engine uses the encoder (StartVectors, as
// serve does), and not when the same root is recalled without it; a
// Chinese prompt's packet is the same with and without. It fails when
// Engine.Recall does not pass its Dense to the broker's recall (q.Dense
// = e.denseOf() removed), and when no dense score passes recall's
// absolute floors (DenseFloor above 1, or its clause removed from pick).
func TestPacketWithVectors(t *testing.T) {
	m, err := vectors.LoadInstalled(false)
	require.NoError(t, err)
	if m == nil {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the sentence encoder is needed in CI (dshmem model install; DSHMEM_MODELS)")
		t.Skip("the sentence encoder is not installed (dshmem model install)")
	}
	ctx := context.Background()
	const cwd = "/home/u/shop"
	eng := enginetest.Open(t, t.TempDir())
	d := vectors.NewDense(m)
	eng.StartVectors(d, 1)
	english := []string{
		meaningMemory,
		"Releases go out through a blue-green switch on the load balancer, never by restarting the live pods.",
		"The CI cache lives in /var/cache/ci and is wiped every Sunday.",
		"Use tabs for indentation in Go files; gofmt decides the rest.",
		"The staging database is reset from a snapshot every night at two.",
	}
	var lines [][]byte
	for i, c := range append(english, "数据库迁移之前一定要先备份", "我们用 pnpm 管理依赖") {
		lines = append(lines, []byte(fmt.Sprintf(`{"id":"mem:%d","type":"memory/remember","time":"2026-08-18T10:00:00Z","cwd":%q,"data":{"content":%q}}`, i, cwd, c)))
	}
	lines = append(lines, []byte(`{"id":"mem:g","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":"Answer in short sentences, the user reads on a phone."}}`))
	enginetest.Ingest(t, eng, lines)
	require.NoError(t, eng.VectorsIdle(ctx))
	require.NoError(t, eng.VectorsError())
	es, err := eng.Entries(ctx, observer.EntryFilter{})
	require.NoError(t, err)
	var target string
	for _, e := range es {
		if e.Content == meaningMemory {
			target = e.ID
		}
	}
	require.NotEmpty(t, target, "no entry %q", meaningMemory)

	// The pair is what the test says it is: the model rates the prompt
	// nearest the memory, by a margin.
	enc := m.Encoder().NewEncoder()
	q := enc.EncodeTail(nil, meaningPrompt)
	near := encoder.Dot(q, enc.Encode(nil, meaningMemory))
	for _, s := range append(english[1:], "Answer in short sentences, the user reads on a phone.") {
		c := encoder.Dot(q, enc.Encode(nil, s))
		assert.Less(t, c, near-0.2, "the prompt is as near %q (%.3f) as its pair (%.3f)", s, c, near)
	}

	stream := eng.Scope(cwd).Stream
	// packet is what a fetch of a new session whose last prompt is prompt
	// serves: nil when nothing is worth showing (reason "none").
	packet := func(session, prompt string) *broker.Packet {
		t.Helper()
		// No 100 ms deadline: at load 15 a cut recall finds nothing.
		b := broker.New(eng, broker.PacketOptions{RecallTimeout: 10 * time.Second}, metrics.New(), time.Now, t.Logf)
		data, err := json.Marshal(map[string]any{"text": prompt})
		require.NoError(t, err)
		b.Observe([]events.Envelope{{Stream: stream, Session: session, Type: events.TypeUserMessage, Data: data}})
		b.ComputeNow(ctx, session)
		got := b.Fetch(session, 0, false, 0, false)
		require.True(t, got.Packet != nil || got.Reason == "none", "session %s: no packet (%s)", session, got.Reason)
		return got.Packet
	}
	ids := func(p *broker.Packet) []string {
		var out []string
		if p == nil {
			return nil
		}
		for _, e := range p.Entries {
			out = append(out, e.ID)
		}
		return out
	}
	const zhPrompt = "迁移数据库之前要做什么？"

	withEN, withZH := packet("s-en", meaningPrompt), packet("s-zh", zhPrompt)
	eng.UseDense(nil) // the same root, the model not used
	withoutEN, withoutZH := packet("s-en", meaningPrompt), packet("s-zh", zhPrompt)

	require.NotNil(t, withEN, "with the model: nothing to show")
	require.NotEmpty(t, withEN.Entries, "with the model: an empty packet (mode %s)", withEN.Mode)
	assert.Equal(t, target, withEN.Entries[0].ID, "with the model: got %v, want %s first", ids(withEN), target)
	assert.NotContains(t, ids(withoutEN), target, "without the model the words alone found it: the test shows nothing")
	require.NotNil(t, withoutZH, "the Chinese prompt found nothing")
	assert.NotEmpty(t, withoutZH.Entries, "the Chinese prompt found nothing")
	assert.Equal(t, withoutZH, withZH, "the Chinese prompt's packet differs with the model")
}
