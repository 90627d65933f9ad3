package distill

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAliases(t *testing.T) {
	for _, tc := range []struct{ text, alias, expansion string }{
		{"PG 就是 PostgreSQL", "PG", "PostgreSQL"},
		{"咱们那个 billing 服务叫 账单中心", "账单中心", "billing 服务"},
		{"我们管 billing 服务叫 账单中心。", "账单中心", "billing 服务"},
		{"k8s is short for Kubernetes", "k8s", "Kubernetes"},
		{"by PG I mean PostgreSQL 16", "PG", "PostgreSQL 16"},
		{"PostgreSQL，简称 PG", "PG", "PostgreSQL"},
		{"PG 是 PostgreSQL 的简称", "PG", "PostgreSQL"},
		{`we call the billing service "Ledger"`, "Ledger", "billing service"},
		// Not aliases: ordinary statements, config, questions,
		// hypotheticals, negations.
		{"问题就是内存泄漏", "", ""},
		{"数据库用的是 PostgreSQL 16", "", ""},
		{"export DEPLOY_TOKEN=abc123", "", ""},
		{"TIMEOUT=30s in the config", "", ""},
		{"PG 就是 PostgreSQL 吗？", "", ""},
		{"如果 PG 就是 PostgreSQL 的话", "", ""},
		{"PG 不是 PostgreSQL", "", ""},
		{"what if k8s is short for something else", "", ""},
		{"```\nPG 就是 PostgreSQL\n```", "", ""},
	} {
		got := Aliases(tc.text)
		if tc.alias == "" {
			assert.Empty(t, got, "%q", tc.text)
			continue
		}
		if assert.Len(t, got, 1, "%q: got %+v", tc.text, got) {
			assert.Equal(t, tc.alias+" = "+tc.expansion, got[0].Alias+" = "+got[0].Expansion, "%q", tc.text)
		}
	}
}

func TestFeedback(t *testing.T) {
	for text, want := range map[string]string{
		"yes, that's right": FeedbackConfirm, "对，没错": FeedbackConfirm, "Exactly.": FeedbackConfirm, "好了，谢谢": FeedbackConfirm,
		"no, that's wrong": FeedbackCorrection, "不对，是 8080": FeedbackCorrection, "错了": FeedbackCorrection, "no": FeedbackCorrection,
		"对不起，我说错了": FeedbackNone, "yesterday it broke": FeedbackNone, "right?": FeedbackNone, "is that correct?": FeedbackNone,
		"Correctly configured the cache": FeedbackNone, "对对对，以后都别写测试了 /s": FeedbackNone, "notes for later": FeedbackNone,
		"yes, and then please also update the deployment docs, the changelog and the release notes": FeedbackNone,
	} {
		assert.Equal(t, want, Feedback(text), "%q", text)
	}
}

// TestAliasQuote: the quote is the user's words for the alias, to the
// end of its clause, and no further.
func TestAliasQuote(t *testing.T) {
	for text, want := range map[string]string{
		"PG 是 PostgreSQL 的简称":                  "PG 是 PostgreSQL 的简称",
		"PG 就是 PostgreSQL，replica 跑在 5433 端口":  "PG 就是 PostgreSQL",
		`we call the billing service "Ledger"`: `we call the billing service "Ledger"`,
	} {
		got := Aliases(text)
		if assert.Len(t, got, 1, "%q", text) {
			assert.Equal(t, want, got[0].Quote, "%q", text)
		}
	}
}
