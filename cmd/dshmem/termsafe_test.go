package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith tab\n":       "plain text\twith tab\n",
		"\x1b[2J\x1b]0;owned\x07":      `\u001b[2J\u001b]0;owned\u0007`,
		"over\rwrite\bback\x7f":        `over\u000dwrite\u0008back\u007f`,
		"c1 \u009b31m csi":             `c1 \u009b31m csi`,
		"bidi \u202eevil\u2066x\u2069": `bidi \u202eevil\u2066x\u2069`,
		"中文、emoji 🙂 stay":              "中文、emoji 🙂 stay",
		"bad \xff byte":                `bad \xff byte`,
	} {
		var b bytes.Buffer
		_, err := termSafe(&b).Write([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, want, b.String(), "%q", in)
	}
	// A rune split across writes is kept whole.
	var b bytes.Buffer
	w := termSafe(&b)
	s := []byte("é\u009b中")
	for i := range s {
		w.Write(s[i : i+1])
	}
	assert.Equal(t, `é\u009b中`, b.String())
	// JSON passes unchanged in meaning.
	v := map[string]string{"text": "a\x1bb\u009bc\u202ed"}
	raw, _ := json.Marshal(v)
	b.Reset()
	termSafe(&b).Write(raw)
	var back map[string]string
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	assert.Equal(t, v, back)
}

// TestStoredEscapesAreNotPrinted: text from the log that holds terminal
// escapes (a clear screen, a title change, a CSI in C1 form, a bidi
// override) is printed escaped by every command that shows it.
func TestStoredEscapesAreNotPrinted(t *testing.T) {
	root := t.TempDir()
	evil := "deploy \x1b[2J\x1b]0;pwned\x07 note \u009b31m and \u202egnp.exe"
	line, _ := json.Marshal(map[string]any{"id": "e:1", "type": "user/message", "time": "2026-08-18T10:00:00Z",
		"session": "s1", "cwd": "/home/u/esc", "data": map[string]any{"text": evil}})
	code, _, errs := cli(t, string(line)+"\n", "--root", root, "ingest")
	require.Equal(t, 0, code, errs)
	code, out, errs := cli(t, "", "--root", root, "remember", "--cwd", "/home/u/esc", evil)
	require.Equal(t, 0, code, errs)
	id := strings.TrimSpace(out)
	for _, args := range [][]string{
		{"search", "deploy", "--kind", "all"}, {"entries"}, {"history", id}, {"recall", "--timeout", "1m", "--cwd", "/home/u/esc", "deploy note"},
		{"sql", "SELECT data FROM events"},
	} {
		code, out, errs := cli(t, "", append([]string{"--root", root}, args...)...)
		require.Equal(t, 0, code, "%v: %s", args, errs)
		assert.Contains(t, out, `\u001b`, "%v: the escape is not shown escaped:\n%s", args, out)
		for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
			assert.NotContains(t, out, raw, "%v printed a raw %q", args, raw)
		}
	}
}
