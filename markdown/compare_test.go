package markdown

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	es := fixtureEntries()
	rendered := RenderGlobal(es)
	s := string(rendered)

	edit := func(old, new string) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			t.Helper()
			require.Contains(t, s, old, "fixture does not contain %q", old)
			return []byte(strings.Replace(s, old, new, 1))
		}
	}
	firstLines := func(n int) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return []byte(strings.Join(strings.SplitAfter(s, "\n")[:n], "")) }
	}
	pnpmBlock := "<!-- mem:m-3f1a9c2b7d10 -->\n### Use pnpm, not npm\n*preference · importance 2 · tags: node, tooling · terms: pnpm, npm*\n> Package manager for Node projects.\n\nInstall dependencies with pnpm; never npm.\n\n"

	tests := []struct {
		name    string
		edited  func(t *testing.T) []byte
		check   func(t *testing.T, d Diff)
		damaged bool
	}{
		{name: "Unchanged", edited: func(*testing.T) []byte { return rendered },
			check: func(t *testing.T, d Diff) { wantEmpty(t, d) }},
		{name: "WhitespaceOnly", edited: func(*testing.T) []byte {
			b := strings.ReplaceAll(s, "\n", "  \r\n")            // CRLF and trailing spaces
			b = strings.ReplaceAll(b, "\r\n\r\n", "\r\n\r\n\r\n") // more blank lines
			return []byte(b + "\n\n   \n")
		}, check: func(t *testing.T, d Diff) { wantEmpty(t, d) }},
		{name: "MissingFinalNewline", edited: func(*testing.T) []byte { return bytes.TrimRight(rendered, "\n") },
			check: func(t *testing.T, d Diff) { wantEmpty(t, d) }},
		{name: "Reordered", edited: func(t *testing.T) []byte {
			return []byte(strings.Replace(s, pnpmBlock, "", 1) + "\n" + pnpmBlock)
		}, check: func(t *testing.T, d Diff) { wantEmpty(t, d) }},
		{name: "RevisedBody", edited: edit("never npm.", "never npm or yarn."), check: func(t *testing.T, d Diff) {
			want := Canonical(es[0])
			want.Content = "Install dependencies with pnpm; never npm or yarn."
			assert.False(t, len(d.Revised) != 1 || !reflect.DeepEqual(d.Revised[0], want), "Revised = %#v, want [%#v]", d.Revised, want)
			assert.EqualValues(t, 0, len(d.Added)+len(d.Removed)+len(d.Foreign), "got more than the revision: %+v", d)
		}},
		{name: "RevisedMeta", edited: edit("*rule · importance 3 · tags: git*", "*rule · importance 1 · tags: git, vcs · conflict: g*"),
			check: func(t *testing.T, d Diff) {
				require.Len(t, d.Revised, 1, "Revised = %#v, want one entry", d.Revised)
				r := d.Revised[0]
				assert.False(t, r.ID != "m-1111aaaa2222" || r.Importance != 1 || !reflect.DeepEqual(r.Tags, []string{"git", "vcs"}) || r.Status != StatusConflict || r.ConflictGroup != "g", "got %#v", r)
			}},
		{name: "RevisedTitleChinese", edited: edit("### 回答用中文", "### 回答请用中文"), check: func(t *testing.T, d Diff) {
			assert.False(t, len(d.Revised) != 1 || d.Revised[0].Title != "回答请用中文" || d.Revised[0].ID != "m-0a0b0c0d0e0f", "Revised = %#v", d.Revised)
		}},
		{name: "Added", edited: func(*testing.T) []byte {
			return []byte(s + "\n### Prefer table tests\nOne table, subtests named by outcome.\n")
		},
			check: func(t *testing.T, d Diff) {
				want := Entry{Title: "Prefer table tests", Content: "One table, subtests named by outcome.", Importance: DefaultImportance, Status: StatusActive}
				assert.False(t, len(d.Added) != 1 || !reflect.DeepEqual(d.Added[0], want), "Added = %#v, want [%#v]", d.Added, want)
				assert.EqualValues(t, 0, len(d.Revised)+len(d.Removed), "got more than the addition: %+v", d)
			}},
		{name: "AddedWithMeta", edited: edit("## Rules\n", "## Rules\n\n### 新规则\n*rule · importance 2 · tags: 测试*\n> 描述\n\n内容\n"),
			check: func(t *testing.T, d Diff) {
				want := Entry{Type: "rule", Title: "新规则", Description: "描述", Content: "内容", Tags: []string{"测试"}, Importance: 2, Status: StatusActive}
				assert.False(t, len(d.Added) != 1 || !reflect.DeepEqual(d.Added[0], want), "Added = %#v, want [%#v]", d.Added, want)
				assert.Len(t, d.Revised, 0, "Revised = %#v, want none", d.Revised)
			}},
		{name: "CopiedBlockIsAdded", edited: func(*testing.T) []byte {
			return []byte(s + "\n" + strings.Replace(pnpmBlock, "never npm", "never bun", 1))
		},
			check: func(t *testing.T, d Diff) {
				assert.False(t, len(d.Added) != 1 || d.Added[0].ID != "" || !strings.Contains(d.Added[0].Content, "never bun") || len(d.Revised) != 0, "got %+v, want one added entry without id", d)
			}},
		{name: "ForeignAnchor", edited: func(*testing.T) []byte {
			return []byte(s + "\n<!-- mem:m-elsewhere -->\n### Moved here\n*fact · importance 1*\n\ntext\n")
		}, check: func(t *testing.T, d Diff) {
			assert.False(t, len(d.Foreign) != 1 || d.Foreign[0].ID != "m-elsewhere", "Foreign = %#v", d.Foreign)
		}},
		{name: "Removed", edited: edit(pnpmBlock, ""), check: func(t *testing.T, d Diff) {
			assert.True(t, reflect.DeepEqual(d.Removed, []string{"m-3f1a9c2b7d10"}), "Removed = %q, want [m-3f1a9c2b7d10]", d.Removed)
			assert.EqualValues(t, 0, len(d.Revised)+len(d.Added), "got more than the removal: %+v", d)
		}},
		{name: "Stray", edited: edit("## Rules\n", "## Rules\n\nA note outside any block.\n"), check: func(t *testing.T, d Diff) {
			assert.True(t, reflect.DeepEqual(d.Stray, []string{"A note outside any block."}), "Stray = %q", d.Stray)
		}},
		{name: "DamagedFirst16Lines", edited: firstLines(16), damaged: true},
		{name: "DamagedEmptied", edited: func(*testing.T) []byte { return nil }, damaged: true},
		{name: "DamagedMoreThanHalfGone", edited: func(*testing.T) []byte {
			// keep 6 of the 13 blocks
			doc, _ := Parse(rendered)
			var b strings.Builder
			for _, blk := range doc.Blocks[:6] {
				b.WriteString(blk.Raw + "\n")
			}
			return []byte(b.String())
		}, damaged: true},
		{name: "HalfGoneIsAnEdit", edited: func(*testing.T) []byte {
			doc, _ := Parse(rendered)
			var b strings.Builder
			for _, blk := range doc.Blocks[:7] { // 6 of 13 gone
				b.WriteString(blk.Raw + "\n")
			}
			return []byte(b.String())
		}, check: func(t *testing.T, d Diff) {
			assert.Len(t, d.Removed, 6, "Removed %d, want 6", len(d.Removed))
		}},
		{name: "DamagedBadMeta", edited: edit("*rule · importance 3 · tags: git*", "*rule · importance 9 · tags: git*"), damaged: true},
		{name: "DamagedMetaDeleted", edited: edit("*rule · importance 3 · tags: git*\n", ""), damaged: true},
		{name: "DamagedHeadingDeleted", edited: edit("### Never push to main\n", ""), damaged: true},
		{name: "DamagedNotUTF8", edited: func(*testing.T) []byte { return append(slicesClone(rendered), 0xff, '\n') }, damaged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compare(rendered, tt.edited(t))
			require.NoError(t, err, "Compare")
			require.Equal(t, tt.damaged, d.Damaged, "Damaged = %v (%s), want %v; diff %+v", d.Damaged, d.Reason, tt.damaged, d)
			assert.False(t, d.Damaged && d.Reason == "", "Damaged without a Reason")
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

func slicesClone(b []byte) []byte { return append([]byte(nil), b...) }

func wantEmpty(t *testing.T, d Diff) {
	t.Helper()
	assert.True(t, d.Empty(), "got %+v, want an empty diff", d)
}

func TestCompareRenderedError(t *testing.T) {
	_, err := Compare([]byte{0xff}, nil)
	var le *LineError
	assert.False(t, !errors.As(err, &le) || !errors.Is(err, ErrNotUTF8), "got %v, want a LineError wrapping ErrNotUTF8", err)
}

func TestCompareSessionDay(t *testing.T) {
	rendered := RenderSessionDay("2026-08-18", fixtureSessions())
	d, err := Compare(rendered, rendered)
	assert.False(t, err != nil || !d.Empty(), "got %+v, %v; want an empty diff", d, err)
	d, err = Compare(rendered, rendered[:40])
	assert.False(t, err != nil || !d.Damaged, "cut session file: got %+v, %v; want Damaged", d, err)
}
