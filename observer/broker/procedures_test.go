package broker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer/metrics"
	"dshmem/sqlstore/recall"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procIndex recalls nothing and holds procedures by stream.
type procIndex struct {
	procs map[string][]payload.Procedure
}

func (procIndex) Recall(ctx context.Context, q recall.Query) (*recall.Result, error) {
	return &recall.Result{Items: []recall.Item{}}, nil
}

func (x procIndex) Procedures(ctx context.Context, stream string, stages ...string) ([]payload.Procedure, error) {
	var out []payload.Procedure
	for _, p := range x.procs[stream] {
		if len(stages) == 0 || p.Stage == stages[0] {
			out = append(out, p)
		}
	}
	return out, nil
}

// TestPacketOffersOnlyActiveProcedures: of four procedures with the
// same trigger in stages P1, P2, P3 and P4, only the P3 one reaches the
// packet, as a checklist of its steps and check; a session of another
// workspace gets none of them, and a prompt that does not match the
// trigger gets none either.
func TestPacketOffersOnlyActiveProcedures(t *testing.T) {
	proc := func(id, stage string) payload.Procedure {
		return payload.Procedure{ID: id, Stage: stage, Trigger: "run the checks before the release",
			Steps: []string{"bash go vet ./...", "bash go test ./..."}, Check: "the last step (bash go test ./...) reports success"}
	}
	idx := procIndex{procs: map[string][]payload.Procedure{"ws-a": {
		proc("p-0000000000000001", payload.StageCandidate), proc("p-0000000000000002", payload.StageValidated),
		proc("p-0000000000000003", payload.StageActive), proc("p-0000000000000004", payload.StageDeprecated)}}}
	// The broker asks for P3 only; a fake that returned every stage must
	// still not let the others through.
	all := procIndex{procs: idx.procs}
	for name, rec := range map[string]Recaller{"filtered": idx, "unfiltered": allStages{all}} {
		t.Run(name, func(t *testing.T) {
			b := New(rec, PacketOptions{}, metrics.New(), time.Now, t.Logf)
			packet := func(session, stream, text string) *Packet {
				data, _ := json.Marshal(map[string]any{"text": text})
				b.Observe([]events.Envelope{{Stream: stream, Session: session, Type: events.TypeUserMessage, Data: data}})
				b.ComputeNow(context.Background(), session)
				return b.Fetch(session, 0, false, 0, false).Packet
			}
			p := packet("s1", "ws-a", "please run the checks before the release")
			require.NotNil(t, p, "no packet for a prompt matching the trigger")
			assert.Equal(t, ModeChecklist, p.Mode)
			require.Len(t, p.Entries, 1, "entries: %+v", p.Entries)
			assert.Equal(t, "p-0000000000000003", p.Entries[0].ID)
			assert.True(t, p.Entries[0].Procedure)
			assert.Contains(t, p.Text, "1. bash go vet ./...; 2. bash go test ./...; check: the last step")
			assert.Contains(t, p.Text, "A procedure that worked in this workspace before")

			if p := packet("s2", "ws-b", "please run the checks before the release"); p != nil {
				assert.Empty(t, p.Entries, "a session of another workspace got %+v", p.Entries)
			}
			if p := packet("s3", "ws-a", "what is the weather"); p != nil {
				assert.Empty(t, p.Entries, "an unrelated prompt got %+v", p.Entries)
			}
		})
	}
}

// allStages answers every stage whatever is asked.
type allStages struct{ procIndex }

func (x allStages) Procedures(ctx context.Context, stream string, stages ...string) ([]payload.Procedure, error) {
	return x.procIndex.Procedures(ctx, stream)
}

// TestPacketMarksLowConfidence: an entry recall flags low-confidence is
// marked in the packet's text and entry.
func TestPacketMarksLowConfidence(t *testing.T) {
	text, kept := renderPacket(ModeHint, []PacketEntry{{ID: "m-0000000000000001", Title: "deploy with make ship",
		Text: "make ship deploys", LowConfidence: true}}, 600)
	require.Len(t, kept, 1)
	assert.True(t, strings.Contains(text, "deploy with make ship [low confidence]"), "text %q", text)
}
