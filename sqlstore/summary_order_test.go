package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"dshmem/sqlstore"
)

// TestSummaryCompareIsSQLOrder holds SummaryCompare to the order
// SummaryEntries reads through the entries_summary index: a fold places
// a new entry in the top of the ranking with it, so a difference would
// put a different summary version into summary_history/ than a render
// from the index (caught there only by replay --verify). The entries mix
// both shown statuses and hidden ones, every importance, every type
// and ids that differ late and by case.
func TestSummaryCompareIsSQLOrder(t *testing.T) {
	ctx := context.Background()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	defer s.Close()
	types := []string{"preference", "rule", "decision", "architecture", "procedure", "fix", "fact"} // the CHECK of entries.type
	statuses := []string{"active", "conflict", "active", "forgotten", "superseded"}
	rng := rand.New(rand.NewPCG(7, 11))
	tx, err := s.BeginFold(ctx)
	require.NoError(t, err)
	const n = 400
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("ws-order/%d/%c", rng.IntN(50), "aAbB"[rng.IntN(4)])
		if i%3 == 0 {
			id = fmt.Sprintf("ws-order/x%03d", i)
		}
		row := sqlstore.EntryRow{ID: fmt.Sprintf("%s#%d", id, i), Scope: "ws-order", Type: types[rng.IntN(len(types))],
			Title: "t", Content: "c", Tags: "[]", Importance: rng.IntN(4), Status: statuses[rng.IntN(len(statuses))], Version: 1}
		_, err := tx.InsertEntry(&row, uint64(i+1), "2026-08-18T10:00:00Z")
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	tx.Close()

	fromSQL, err := s.Reader().SummaryEntries(ctx, "ws-order", n)
	require.NoError(t, err)
	require.Greater(t, len(fromSQL), n/3, "too few shown entries to compare")
	sorted := slices.Clone(fromSQL)
	rng.Shuffle(len(sorted), func(i, j int) { sorted[i], sorted[j] = sorted[j], sorted[i] })
	slices.SortFunc(sorted, func(a, b sqlstore.ProjectedEntry) int { return sqlstore.SummaryCompare(&a, &b) })
	for i := range fromSQL {
		require.Equal(t, fromSQL[i].ID, sorted[i].ID, "position %d: got %s (%s, %d, %q), want %s (%s, %d, %q) as SQL orders them",
			i, sorted[i].ID, sorted[i].Status, sorted[i].Importance, sorted[i].Type,
			fromSQL[i].ID, fromSQL[i].Status, fromSQL[i].Importance, fromSQL[i].Type)
	}

	// ShownEntry reads a shown entry as SummaryEntries does, and no other.
	got, ok, err := s.Reader().ShownEntry(ctx, "ws-order", fromSQL[0].ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, fromSQL[0], got)
	_, ok, err = s.Reader().ShownEntry(ctx, "ws-other", fromSQL[0].ID)
	require.NoError(t, err)
	require.False(t, ok, "an entry of another scope")
}
