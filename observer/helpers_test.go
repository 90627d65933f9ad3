package observer

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"dshmem/projector"
	"dshmem/sqlstore"
)

// indexDumps returns the canonical dump of eng's live index and of an
// index folded afresh from its log (projector.Dump leaves out the rows
// that record Markdown files: a bare projector writes none).
func indexDumps(t *testing.T, eng *Engine) (live, fresh []byte) {
	t.Helper()
	ctx := context.Background()
	var lb, fb bytes.Buffer
	if err := projector.Dump(ctx, eng.Store(), &lb); err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(filepath.Join(t.TempDir(), "fresh.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := projector.New(st).CatchUp(ctx, eng.Log(), nil); err != nil {
		t.Fatal(err)
	}
	if err := projector.Dump(ctx, st, &fb); err != nil {
		t.Fatal(err)
	}
	return lb.Bytes(), fb.Bytes()
}
