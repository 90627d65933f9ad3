package observer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRevise: an edit from the page is one memory/ops event with a
// revise op (provenance "ui") in the entry's stream; the entry's next
// version has the new text, its history names the op, and replay
// reproduces every file.
func TestRevise(t *testing.T) {
	ctx := context.Background()
	eng := openEngine(t, t.TempDir())
	en, err := eng.Remember(ctx, observer.RememberRequest{Cwd: "/home/u/rev", Content: "Deploy with make ship", Tags: []string{"deploy"}, Time: memT0})
	require.NoError(t, err)
	imp := 3
	desc := "how releases go out"
	got, err := eng.Revise(ctx, en.ID, observer.ReviseRequest{Title: "Deploying", Content: "Deploy with make release", Description: &desc,
		Type: "procedure", Tags: []string{"deploy", "release"}, Importance: &imp, Reason: "the target was renamed"})
	require.NoError(t, err)
	assert.Equal(t, "Deploy with make release", got.Content, "got %+v", got)
	assert.Equal(t, "Deploying", got.Title, "got %+v", got)
	assert.Equal(t, "procedure", got.Type, "got %+v", got)
	assert.Equal(t, []string{"deploy", "release"}, got.Tags, "got %+v", got)
	assert.Equal(t, 3, got.Importance, "got %+v", got)
	assert.Equal(t, desc, got.Description, "got %+v", got)
	assert.EqualValues(t, 2, got.Version, "got %+v", got)
	assert.Equal(t, payload.StatusActive, got.Status, "got %+v", got)
	var prov struct {
		EventIDs []string
		Reason   string
	}
	require.NoError(t, json.Unmarshal(got.Provenance, &prov))
	require.Len(t, prov.EventIDs, 2, "provenance %s: want the remember and the revise events", got.Provenance)
	assert.Contains(t, prov.EventIDs[1], "dshmem:revise:", "provenance %s", got.Provenance)

	h, err := eng.History(ctx, en.ID)
	require.NoError(t, err)
	require.Len(t, h, 2, "got %+v", h)
	assert.Equal(t, "revise", h[1].Op, "got %+v", h[1])
	assert.Equal(t, events.TypeMemoryOps, h[1].EventType, "got %+v", h[1])
	assert.Equal(t, "the target was renamed", h[1].Reason, "got %+v", h[1])
	assert.Contains(t, h[1].Checkpoint, observer.ProvenanceUI+"-", "got %+v: want the version to name the page as its origin", h[1])
	assert.Equal(t, "Deploy with make ship", h[0].Content, "the first version changed: %+v", h[0])

	var evs []events.Envelope
	require.NoError(t, eng.Log().Scan(en.Scope, 0, func(ev events.Envelope) error { evs = append(evs, ev); return nil }))
	last := evs[len(evs)-1]
	require.Equal(t, events.TypeMemoryOps, last.Type, "got %+v", last)
	var ops payload.Ops
	require.NoError(t, payload.Unmarshal(last.Data, &ops))
	require.Len(t, ops.Ops, 1, "got %s", last.Data)
	assert.Equal(t, payload.OpRevise, ops.Ops[0].Op, "got %s", last.Data)
	assert.Equal(t, observer.ProvenanceUI, ops.Ops[0].Provenance, "got %s", last.Data)
	assert.Empty(t, ops.Session, "a page edit claims no session range: %s", last.Data)

	t.Run("OnlyWhatChanges", func(t *testing.T) {
		got, err := eng.Revise(ctx, en.ID, observer.ReviseRequest{Title: "Deploying", Content: "Deploy with make release v2"})
		require.NoError(t, err)
		assert.Equal(t, []string{"deploy", "release"}, got.Tags, "an edit without tags cleared them: %+v", got)
		assert.Equal(t, desc, got.Description, "got %+v", got)
		var evs []events.Envelope
		require.NoError(t, eng.Log().Scan(en.Scope, 0, func(ev events.Envelope) error { evs = append(evs, ev); return nil }))
		var ops payload.Ops
		require.NoError(t, payload.Unmarshal(evs[len(evs)-1].Data, &ops))
		assert.Empty(t, ops.Ops[0].Title, "an unchanged title was written again: %+v", ops.Ops[0])
	})

	seqBefore := eng.Log().LastSeq(en.Scope)
	refused := func(t *testing.T, id string, r observer.ReviseRequest, target error) {
		t.Helper()
		_, err := eng.Revise(ctx, id, r)
		require.Error(t, err)
		if target != nil {
			require.ErrorIs(t, err, target, "got %v", err)
		}
		assert.EqualValues(t, seqBefore, eng.Log().LastSeq(en.Scope), "a refused revise was written (%v)", err)
	}
	t.Run("ErrNoChange", func(t *testing.T) {
		refused(t, en.ID, observer.ReviseRequest{Title: "Deploying"}, observer.ErrNoChange)
	})
	t.Run("ErrUnknownEntry", func(t *testing.T) {
		refused(t, "m-0000000000000000", observer.ReviseRequest{Title: "x"}, observer.ErrUnknownEntry)
	})
	t.Run("ErrOnlySecret", func(t *testing.T) {
		refused(t, en.ID, observer.ReviseRequest{Content: "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"}, nil)
		_, err := eng.Revise(ctx, en.ID, observer.ReviseRequest{Content: "sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA"})
		var re *observer.RefusedError
		require.True(t, errors.As(err, &re), "got %v, want a refusal naming the content", err)
	})
	t.Run("ErrBadType", func(t *testing.T) {
		refused(t, en.ID, observer.ReviseRequest{Type: "poem"}, nil)
	})
	t.Run("ErrBadImportance", func(t *testing.T) {
		bad := 9
		refused(t, en.ID, observer.ReviseRequest{Importance: &bad}, nil)
	})
	t.Run("ErrBadProvenance", func(t *testing.T) {
		refused(t, en.ID, observer.ReviseRequest{Title: "y", Provenance: "distiller"}, nil)
	})
	t.Run("ErrEntryForgotten", func(t *testing.T) {
		_, err := eng.Forget(ctx, en.ID, "")
		require.NoError(t, err)
		seqBefore = eng.Log().LastSeq(en.Scope)
		refused(t, en.ID, observer.ReviseRequest{Title: "z"}, observer.ErrEntryForgotten)
	})
	t.Run("Replay", func(t *testing.T) {
		require.NoError(t, eng.WriteFiles(ctx))
		verifyReplay(t, eng)
	})
}
