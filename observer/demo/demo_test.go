package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRun(t *testing.T) {
	var b bytes.Buffer
	if err := Run(context.Background(), &b, t.TempDir()); err != nil {
		t.Fatalf("Run: %v\n%s", err, b.String())
	}
	out := b.String()
	for _, want := range []string{
		"appended 26, duplicates 0, rejected 2",
		"appended 0, duplicates 26",
		"sessions/2026-08-18.md holds 7 compaction summaries",
		"sessions/2026-08-18.md: differs from the log's version from line 17",
		"identical to the file before the damage: true",
		"replay --verify: 0 of",
		`"sk-proj-8fK2mQ9xLr4TzW1vB7nC3dE5gH6jP0sA" in the decompressed log: false`,
		`"Xk9fLq2w" in the decompressed log: false`,
		"on open: repaired",
		"problems after repair: 0",
		"importing again: 0 appended, 25 duplicates",
		"3 injected by plugins",
		`"The shop database is MySQL 8 on db.internal"`,
		`quoting "Correction: the shop database is not MySQL but PostgreSQL 16 now"`,
	} {
		assert.Contains(t, out, want, "demo output lacks %q:\n%s", want, out)
	}
	// The superseded MySQL entry must not come back in the recall step.
	recall := out[strings.Index(out, "Recall:"):]
	recall = recall[:strings.Index(recall, "Verify the log")]
	assert.False(t, strings.Contains(recall, "MySQL 8 on db.internal") || !strings.Contains(recall, "PostgreSQL 16"), "recall step shows the superseded fact or misses the new one:\n%s", recall)
}
