package broker

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
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

// TestRenderPacketBudget: a packet's text never exceeds its byte budget,
// cut on rune boundaries, the frame first and the first entry always
// kept; entries that do not fit are dropped from the packet too.
func TestRenderPacketBudget(t *testing.T) {
	var es []PacketEntry
	for i := range 12 {
		es = append(es, PacketEntry{ID: fmt.Sprintf("m-%016d", i), Title: "部署流程 deploy " + strings.Repeat("步骤", 10),
			Text: strings.Repeat("先运行数据库迁移再启动服务 run the migrations first. ", 8)})
	}
	for _, budget := range []int{200, 600, 1500} {
		for _, mode := range []string{ModeHint, ModeChecklist} {
			text, kept := renderPacket(mode, append([]PacketEntry(nil), es...), budget)
			assert.LessOrEqual(t, len(text), budget, "%s budget %d: %d bytes", mode, budget, len(text))
			assert.True(t, utf8.ValidString(text), "%s budget %d: cut inside a rune", mode, budget)
			assert.True(t, strings.HasPrefix(text, PacketFrame), "%s budget %d: no frame", mode, budget)
			require.NotEmpty(t, kept, "%s budget %d: the first entry was dropped", mode, budget)
			assert.Less(t, len(kept), len(es), "%s budget %d: all 12 long entries fit", mode, budget)
			for _, e := range kept[1:] {
				assert.Contains(t, text, e.ID, "%s budget %d: kept entry %s is not in the text", mode, budget, e.ID)
			}
		}
	}
	assert.Equal(t, 600, PacketOptions{}.withDefaults().Budget, "the default budget is 600 bytes")
}
