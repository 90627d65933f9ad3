package backup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer/backup"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodManifest = `{"format":1,"generation":2,"created":"2026-12-02T03:00:00Z","root":"/r",
"streams":{"global":3},"index":{"path":"index-00000000000000000002.db","size":10,"sha256":"ab","cursors":{"global":3}},
"files":[{"path":"log/global/00000000000000000001.jsonl.zst","size":5,"sha256":"cd","sealed":true}]}`

func TestReadManifestRefusesBadInput(t *testing.T) {
	for name, body := range map[string]string{
		"NotJSON":     `{"format":`,
		"Format":      `{"format":9,"files":[]}`,
		"Escape":      strings.Replace(goodManifest, "log/global/", "log/../../etc/", 1),
		"Absolute":    strings.Replace(goodManifest, `"path":"log/global/`, `"path":"/log/global/`, 1),
		"NotLog":      strings.Replace(goodManifest, `"path":"log/global/`, `"path":"x/global/`, 1),
		"IndexInDir":  strings.Replace(goodManifest, `"path":"index-`, `"path":"sub/index-`, 1),
		"IndexEscape": strings.Replace(goodManifest, `"path":"index-00000000000000000002.db"`, `"path":".."`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, backup.ManifestFile), []byte(body), 0o600))
			_, err := backup.ReadManifest(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), dir, "the error names the backup")
		})
	}
	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, backup.ManifestFile), []byte(goodManifest), 0o600))
		m, err := backup.ReadManifest(dir)
		require.NoError(t, err)
		assert.EqualValues(t, 2, m.Generation)
		assert.EqualValues(t, 15, m.Bytes())
	})
}

// FuzzReadManifest: a manifest is outside input (a directory anyone may
// point restore-backup at): any bytes give an error or a manifest whose
// paths stay inside the backup, never a panic.
func FuzzReadManifest(f *testing.F) {
	f.Add([]byte(goodManifest))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"format":1,"files":[{"path":"log/a/b"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, backup.ManifestFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := backup.ReadManifest(dir)
		if err != nil {
			return
		}
		for _, fl := range m.Files {
			if !strings.HasPrefix(fl.Path, "log/") || filepath.Clean(fl.Path) != fl.Path || strings.Contains("/"+fl.Path+"/", "/../") {
				t.Fatalf("accepted file path %q", fl.Path)
			}
		}
		if m.Index != nil && (strings.Contains(m.Index.Path, "/") || m.Index.Path == ".." || m.Index.Path == ".") {
			t.Fatalf("accepted index path %q", m.Index.Path)
		}
	})
}
