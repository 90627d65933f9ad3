package payload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"dshmem/events"
)

func TestRewriteText(t *testing.T) {
	upper := func(f TextField, s string) string { return strings.ToUpper(s) }
	cases := []struct {
		name, typ, data, want string
	}{
		{"OK/message", events.TypeUserMessage, `{"text":"hi <b>","injected":false,"x":"keep"}`, `{"text":"HI <B>","injected":false,"x":"keep"}`},
		{"OK/ops", events.TypeMemoryOps,
			`{"checkpoint":"ck-1","ops":[{"op":"add","type":"fact","title":"t","content":"c","terms":["a","b"],"tags":["tag"]},{"op":"forget","targetId":"m-1"}]}`,
			`{"checkpoint":"ck-1","ops":[{"op":"add","type":"fact","title":"T","content":"C","terms":["A","B"],"tags":["tag"]},{"op":"forget","targetId":"m-1"}]}`},
		{"OK/args", events.TypeToolCall, `{"name":"grep","args":{"pattern":"x","list":["y",1]}}`, `{"name":"grep","args":{"pattern":"X","list":["Y",1]}}`},
		{"OK/legacy", events.TypeMemoryRemember, `{"content":"c","legacy":{"source":"s","heading":"h"}}`, `{"content":"C","legacy":{"source":"s","heading":"H"}}`},
		{"OK/no text type", events.TypeMemoryShown, `{"entries":["m-1"]}`, `{"entries":["m-1"]}`},
		{"OK/unchanged", events.TypeUserMessage, `{"text":"ABC", "injected":false}`, `{"text":"ABC", "injected":false}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, changed, err := RewriteText(c.typ, json.RawMessage(c.data), upper)
			require.NoError(t, err)
			require.Equal(t, c.want, string(got), "got %s, want %s", got, c.want)
			require.Equal(t, c.data != c.want, changed)
		})
	}
	t.Run("OpIndex", func(t *testing.T) {
		var seen []string
		_, _, err := RewriteText(events.TypeMemoryOps, json.RawMessage(`{"ops":[{"content":"a"},{"content":"b","oldQuote":"q"}]}`),
			func(f TextField, s string) string {
				seen = append(seen, f.Path+"#"+string(rune('0'+f.Op))+"="+s)
				return s
			})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"ops[].content#0=a", "ops[].content#1=b", "ops[].oldQuote#1=q"}, seen)
	})
	t.Run("ErrNotObject", func(t *testing.T) {
		_, _, err := RewriteText(events.TypeUserMessage, json.RawMessage(`["text"]`), upper)
		require.Error(t, err)
	})
}
