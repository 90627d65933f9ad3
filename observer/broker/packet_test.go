package broker

import (
	"strings"
	"testing"
)

func TestTruncateBytes(t *testing.T) {
	s := strings.Repeat("记", 2000) // 6000 bytes
	got, cut := truncateBytes(s, SummaryBudgetBytes)
	if !cut || !strings.HasSuffix(got, "[注：原文 2000 字符已截断]") || len(strings.Split(got, "\n")[0]) > SummaryBudgetBytes {
		t.Fatalf("got %q…", got[:30])
	}
	if got, cut := truncateBytes("short", 10); cut || got != "short" {
		t.Fatalf("got %q", got)
	}
}
