package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/observer/distill"
	"dshmem/observer/dsh/dshtest"
	"dshmem/observer/handedit"
	"dshmem/observer/importer"
	"dshmem/projector"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type secretSample struct {
	Kind    string   `json:"kind"`
	Text    string   `json:"text"`
	Secrets []string `json:"secrets"`
}

func readSecretCorpus(t *testing.T) []secretSample {
	t.Helper()
	var out []secretSample
	for _, name := range []string{"corpus.jsonl", "corpus-more.jsonl"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "secrets", name))
		require.NoError(t, err)
		for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
			var s secretSample
			require.NoError(t, json.Unmarshal(line, &s))
			out = append(out, s)
		}
	}
	require.GreaterOrEqual(t, len(out), 150)
	return out
}

// leakyDistiller stands for a model that echoes what it read: every op
// it returns holds one of the corpus's secrets, in its content and in a
// secret-named tag.
type leakyDistiller struct{ secrets []secretSample }

func (leakyDistiller) Name() string  { return "leaky" }
func (leakyDistiller) Model() string { return "echo" }
func (d leakyDistiller) Distill(_ context.Context, req distill.Request) (distill.Result, error) {
	var ev []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			ev = append(ev, m.EventID)
		}
	}
	if len(ev) == 0 {
		return distill.Result{Version: 1}, nil
	}
	var ops []distill.Op
	for i, s := range d.secrets {
		ops = append(ops, distill.Op{Op: "add", Type: "fact", Title: fmt.Sprintf("deploy note %d", i),
			Content: "the deploy uses " + s.Text, EvidenceEventIDs: ev[:1]})
	}
	return distill.Result{Version: 1, Operations: ops}, nil
}

// TestSecretsOnEveryPath sends the credential corpus through every way
// text enters dshmem — posted events (free text and nested JSON keys), an
// explicit remember, a distiller's answer, a hand edit of a projection, a
// DSH import and a prompt the host claims — and then finds none of it in
// any file of the root (segments decompressed and raw, index.db and its
// WAL, every Markdown projection) nor in what the broker holds.
func TestSecretsOnEveryPath(t *testing.T) {
	samples := readSecretCorpus(t)
	root := t.TempDir()
	// The distiller echoes a sample of every kind.
	byKind := map[string]secretSample{}
	for _, s := range samples {
		byKind[s.Kind] = s
	}
	var echoed []secretSample
	for _, s := range byKind {
		echoed = append(echoed, s)
	}
	ts := startServer(t, root, ServerOptions{Distiller: leakyDistiller{echoed}})
	cwd := "/home/u/secrets-everywhere"

	// 1. Events: user text, tool output, tool arguments with the secret
	// as text and under secret-named keys at depth.
	evs := []map[string]any{event("s1:0", "session/start", "s1", cwd, map[string]any{"origin": "top"})}
	for i, s := range samples {
		evs = append(evs,
			event(fmt.Sprintf("s1:u%d", i), "user/message", "s1", "", map[string]any{"text": "please deploy; " + s.Text}),
			event(fmt.Sprintf("s1:c%d", i), "tool/call", "s1", "", map[string]any{"name": "http", "args": map[string]any{
				"cmd":     s.Text,
				"headers": map[string]any{"X-Api-Key": s.Secrets[0], "Accept": "json"},
				"env":     map[string]any{"DB_PASSWORD": s.Secrets[0], "nested": []any{map[string]any{"client_secret": s.Secrets[0]}}},
			}}),
			event(fmt.Sprintf("s1:r%d", i), "tool/result", "s1", "", map[string]any{"name": "http", "ok": true, "text": "echo: " + s.Text}),
		)
	}
	for start := 0; start < len(evs); start += 100 {
		ts.must(200, "POST", "/v1/events", evs[start:min(start+100, len(evs))], nil)
	}

	// 2. Remember: a fact that holds a secret is stored redacted.
	for i, s := range samples[:40] {
		ts.must(200, "POST", "/v1/remember", map[string]any{"cwd": cwd, "content": fmt.Sprintf("note %d: %s", i, s.Text)}, nil)
	}

	// 3. The distiller's answer.
	ts.must(200, "POST", "/v1/checkpoint", map[string]any{"cwd": cwd, "force": true}, nil)

	// 4. A prompt the host claims before its log has it.
	for i, s := range samples[:20] {
		ts.call("POST", "/v1/sessions/s1/prompt", map[string]any{"text": "next: " + s.Text, "cwd": cwd, "messageId": fmt.Sprintf("m%d", i)})
	}
	held := strings.Join(ts.srv.Broker().Held("s1"), "\n")
	require.NotEmpty(t, held, "the broker holds nothing for s1")

	// 5. A hand edit of the global projection (which needs an entry to
	// be written at all).
	ts.must(200, "POST", "/v1/remember", map[string]any{"global": true, "type": "rule", "content": "Install dependencies with pnpm."}, nil)
	require.NoError(t, ts.eng.WriteFiles(context.Background()))
	global := filepath.Join(root, filepath.FromSlash(projector.GlobalFile))
	g, _ := os.ReadFile(global)
	var add strings.Builder
	for i, s := range samples[40:80] {
		fmt.Fprintf(&add, "\n### Hand note %d\n\n%s\n", i, s.Text)
	}
	require.NoError(t, os.WriteFile(global, append(g, add.String()...), 0o644))
	rep, err := handedit.Sync(context.Background(), ts.eng)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Files, "the hand edit was not read back")

	// 6. A DSH host log.
	hostRoot := t.TempDir()
	dir := filepath.Join(hostRoot, "--home-u-imported--", "session-imp")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	lines := [][]byte{[]byte(`{"type":"session","version":1,"id":"session-imp","cwd":"/home/u/imported","timestamp":"2026-08-18T10:00:00.000Z"}`)}
	for i, s := range samples[80:] {
		text, _ := json.Marshal("from the host: " + s.Text)
		lines = append(lines, []byte(fmt.Sprintf(`{"type":"user/message","seq":%d,"time":%d,"data":{"content":[{"type":"text","text":%s}],"role":"user","id":"imp-%d"}}`, i+1, 1786000000000+int64(i), text, i)))
	}
	var buf bytes.Buffer
	require.NoError(t, dshtest.WriteZstd(&buf, lines, 5))
	logPath := filepath.Join(dir, "session.jsonl.zst")
	require.NoError(t, os.WriteFile(logPath, buf.Bytes(), 0o600))
	irep, err := importer.ImportDSH(context.Background(), ts.eng, logPath, importer.Options{})
	require.NoError(t, err)
	require.Greater(t, irep.Total.Appended, len(samples[80:])/2, "the import appended %+v", irep.Total)

	require.NoError(t, ts.eng.WriteFiles(context.Background()))
	ts.stop()

	// Every byte on disk: segments decompressed and raw, every other file
	// raw (index.db, its WAL, the Markdown projections, scope.json).
	var disk bytes.Buffer
	md := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		disk.Write(b)
		if strings.HasSuffix(path, ".md") {
			md++
		}
		if strings.HasSuffix(path, ".jsonl.zst") {
			r := events.NewReader(bytes.NewReader(b))
			for {
				batch, err := r.Next()
				if err == io.EOF {
					break
				}
				require.NoError(t, err, "%s", path)
				for _, line := range batch.Lines {
					disk.Write(line)
					disk.WriteByte('\n')
				}
			}
		}
		return nil
	}))
	require.Greater(t, md, 1, "no Markdown projections were written")
	text := disk.String()
	// The texts did arrive (the test is not vacuous): their context is on disk.
	require.Contains(t, text, "please deploy; ")
	require.Contains(t, text, "from the host: ")
	require.Contains(t, text, "Hand note 3")
	require.Contains(t, text, "the deploy uses ")
	for _, s := range samples {
		for _, secret := range s.Secrets {
			assert.NotContains(t, text, secret, "%s: a secret reached the disk", s.Kind)
			assert.NotContains(t, held, secret, "%s: the broker holds a secret", s.Kind)
		}
	}
	require.Contains(t, text, "[REDACTED:secret-field]", "no secret-named key was redacted")
}
