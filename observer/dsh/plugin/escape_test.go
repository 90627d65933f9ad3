package plugin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer/dsh/plugin/hosttest"

	"github.com/stretchr/testify/require"
)

// TestEscapeTemplateAgainstHost renders escaped text with the host's own
// prompt renderer: every string of braces, names and text must come back
// verbatim and never throw.
func TestEscapeTemplateAgainstHost(t *testing.T) {
	h := hosttest.Find(t)
	renderer := filepath.Join(h.Cache, "app", "node_modules", "@deepseek-ai", "dsh-system-prompt", "lib", "index.js")
	if _, err := os.Stat(renderer); err != nil {
		t.Fatalf("the host's prompt renderer: %v", err)
	}
	plugin, err := filepath.Abs("plugin.mjs")
	require.NoError(t, err)
	script := `
import { renderPrompt } from ` + jsString(renderer) + `;
import { escapeTemplate } from ` + jsString(plugin) + `;
const alphabet = ['{', '}', '{{', '}}', 'cwd', ' ', 'a', '{{cwd}}', '{{ x }}', '中', '\n', '{{{', '}}}', '$'];
let seed = 7, n = 0, bad = [];
const rand = (k) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % k; };
const fixed = ['{{cwd}}', '{{ user.name }}', 'a lone }} and {{ stay', '{}}', '{{}', '{{{}}}', '{', '}', '', 'plain', '{"a":{"b":1}}'];
const cases = [...fixed];
for (let i = 0; i < 20000; i++) { let s = ''; const len = rand(12); for (let j = 0; j < len; j++) s += alphabet[rand(alphabet.length)]; cases.push(s); }
for (const text of cases) {
  n++;
  try {
    const out = renderPrompt({ sections: [{ name: 'dshmem:memory', text: escapeTemplate(text) }], variables: { cwd: '/x', dshmem_lbrace: '{' } });
    if (out !== text) bad.push({ text, out });
  } catch (e) { bad.push({ text, error: String(e.message) }); }
  // Without the variable (a host that refused it) the text is altered but
  // still never fails the turn.
  try {
    renderPrompt({ sections: [{ name: 'dshmem:memory', text: escapeTemplate(text, false) }], variables: { cwd: '/x' } });
  } catch (e) { bad.push({ text, fallback: true, error: String(e.message) }); }
}
console.log(JSON.stringify({ n, bad: bad.slice(0, 5), nbad: bad.length }));
`
	dir := t.TempDir()
	path := filepath.Join(dir, "escape.mjs")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
	out, err := exec.Command(filepath.Join(h.Node(), "node"), path).CombinedOutput()
	require.NoError(t, err, "node: %v\n%s", err, out)
	require.Contains(t, string(out), `"nbad":0`, "escaped text does not render verbatim through the host's renderer: %s", out)
	require.Contains(t, string(out), `"n":20011`, "escaped text does not render verbatim through the host's renderer: %s", out)
}

func jsString(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}
