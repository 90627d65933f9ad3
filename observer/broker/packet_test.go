package broker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTruncateBytes(t *testing.T) {
	s := strings.Repeat("记", 2000) // 6000 bytes
	got, cut := truncateBytes(s, SummaryBudgetBytes)
	require.True(t, cut, "got %q…", got[:30])
	require.True(t, strings.HasSuffix(got, "[注：原文 2000 字符已截断]"), "got %q…", got[:30])
	require.False(t, len(strings.Split(got, "\n")[0]) > SummaryBudgetBytes, "got %q…", got[:30])
	if got, cut := truncateBytes("short", 10); cut || got != "short" {
		t.Fatalf("got %q", got)
	}
}
