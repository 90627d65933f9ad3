package encoder

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspect(t *testing.T) {
	t.Run("NotInstalled", func(t *testing.T) {
		dir := t.TempDir()
		r := Inspect(dir)
		assert.Equal(t, Report{Model: ModelID, Version: ModelVersion, Dir: dir, Status: "not installed (dshmem model install)", UsedBy: usedBy}, r)
	})
	t.Run("Damaged", func(t *testing.T) {
		dir := t.TempDir()
		for name := range pinned {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("not the pinned bytes"), 0o644))
		}
		r := Inspect(dir)
		assert.False(t, r.Installed)
		assert.Contains(t, r.Status, "damaged: ")
		assert.Contains(t, r.Status, "has sha256")
		assert.Zero(t, r.LoadMS, "a damaged model is not loaded")
	})
	t.Run("OK", func(t *testing.T) {
		m := testModel(t)
		dir, err := DefaultDir()
		require.NoError(t, err)
		r := Inspect(dir)
		assert.True(t, r.Installed)
		assert.Equal(t, "installed, verified", r.Status)
		assert.Positive(t, r.LoadMS)
		assert.Positive(t, r.QueryMS)
		// `dshmem model status` calls it "one 14-piece query".
		assert.Len(t, m.Tok.Encode(StatusQuery), 14)
	})
}
