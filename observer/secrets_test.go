package observer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/events"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretsNeverReachDisk ingests every credential sample of the
// corpus through the whole engine — as user text, tool output, tool
// arguments and a remembered fact — and then looks for each secret in
// every decompressed segment line and in the raw bytes of index.db and
// its WAL.
func TestSecretsNeverReachDisk(t *testing.T) {
	samples := readCorpus(t)
	require.GreaterOrEqual(t, len(samples), 150, "corpus has %d samples", len(samples))

	root := t.TempDir()
	ctx := context.Background()
	eng, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	var lines [][]byte
	for i, s := range samples {
		text, _ := json.Marshal(s.Text)
		lines = append(lines,
			[]byte(fmt.Sprintf(`{"id":"u%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s","cwd":"/p","data":{"text":%s}}`, i, text)),
			[]byte(fmt.Sprintf(`{"id":"r%d","type":"tool/result","time":"2026-08-18T10:00:00Z","session":"s","data":{"name":"bash","ok":true,"text":%s}}`, i, text)),
			[]byte(fmt.Sprintf(`{"id":"c%d","type":"tool/call","time":"2026-08-18T10:00:00Z","session":"s","data":{"name":"bash","args":{"cmd":%s}}}`, i, text)),
			[]byte(fmt.Sprintf(`{"id":"m%d","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":%s,"title":%s}}`, i, mustJSON("note "+s.Text), text)),
		)
	}
	res, outs, err := eng.Ingest(ctx, lines)
	require.NoError(t, err)
	// A memory/remember that is nothing but a secret is refused; all
	// else is stored, redacted.
	if res.Appended < 3*len(samples) {
		for _, o := range outs {
			if o.Error != nil {
				t.Log(o.Error)
			}
		}
		t.Fatalf("appended %d of %d events", res.Appended, len(lines))
	}
	require.NoError(t, eng.Close())

	var disk bytes.Buffer
	segs, _ := filepath.Glob(filepath.Join(root, LogDir, "*", "*.jsonl.zst"))
	require.NotEqualValues(t, 0, len(segs), "no segments written")
	for _, seg := range segs {
		sf, err := os.Open(seg)
		require.NoError(t, err)
		r := events.NewReader(sf)
		for {
			b, err := r.Next()
			if err != nil {
				break
			}
			for _, l := range b.Lines {
				disk.Write(l)
				disk.WriteByte('\n')
			}
		}
		sf.Close()
	}
	require.Contains(t, string(disk.Bytes()), string([]byte("[REDACTED:")), "the decompressed log holds no placeholder: the check below would prove nothing")
	for _, name := range []string{sqlstore.IndexFile, sqlstore.IndexFile + "-wal"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err == nil {
			disk.Write(b)
		}
	}
	// And every projection.
	md := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			b, err := os.ReadFile(path)
			disk.Write(b)
			md++
			return err
		}
		return err
	}))
	require.Greater(t, md, 0, "no Markdown projection was written")
	for _, s := range samples {
		for _, secret := range s.Secrets {
			assert.NotContains(t, string(disk.Bytes()), string([]byte(secret)), "%s: secret %q reached the disk", s.Kind, secret)
		}
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
