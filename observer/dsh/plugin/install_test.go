package plugin

import (
	"bytes"
	"context"
	"dshmem/observer/httpapi"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinary writes an executable file that stands for dshmem.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin", "dshmem")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	return p
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestInstall(t *testing.T) {
	home := filepath.Join(t.TempDir(), "dsh home") // a space, to be quoted
	o := Options{DSHHome: home, Binary: fakeBinary(t)}

	t.Run("Fresh", func(t *testing.T) {
		rep, err := Install(o)
		require.NoError(t, err)
		assert.False(t, rep.Row != Added || !rep.Created || rep.Backup != "" || rep.Plugin != "written" || rep.RowLine != 2, "got row %s line %d created %v backup %q plugin %s; want added line 2, created, no backup, written", rep.Row, rep.RowLine, rep.Created, rep.Backup, rep.Plugin)
		want := filepath.Join(home, "memory")
		assert.False(t, rep.Entry.Config.Root != want || rep.Entry.Config.DSHHome != home, "got root %q home %q, want %q %q", rep.Entry.Config.Root, rep.Entry.Config.DSHHome, want, home)
		got, _ := os.ReadFile(PluginPath(home))
		assert.Equal(t, Source(), got, "plugin file is not the embedded plugin")
		m := mode(t, PatchPath(home))
		assert.EqualValues(t, 0o600, m, "patch file mode: got %o, want 600", m)
		if m := mode(t, filepath.Dir(PluginPath(home))); m != 0o700 {
			t.Errorf("plugin dir mode: got %o, want 700", m)
		}
		src, _ := os.ReadFile(PatchPath(home))
		e, _, err := Inspect(src)
		assert.False(t, err != nil || e == nil || *e != rep.Entry, "the row reads back as %+v, %v; want %+v", e, err, rep.Entry)
	})
	t.Run("Again", func(t *testing.T) {
		before, _ := os.ReadFile(PatchPath(home))
		rep, err := Install(o)
		require.NoError(t, err)
		after, _ := os.ReadFile(PatchPath(home))
		assert.False(t, rep.Row != Unchanged || rep.Plugin != "unchanged" || rep.Backup != "" || !bytes.Equal(before, after) || exists(BackupPath(home)), "got row %s plugin %s backup %q, bytes equal %v; want nothing changed and no backup", rep.Row, rep.Plugin, rep.Backup, bytes.Equal(before, after))
	})
	t.Run("UpgradeOldPlugin", func(t *testing.T) {
		os.WriteFile(PluginPath(home), []byte("export const version = '0';\n"), 0o600)
		rep, err := Install(o)
		require.NoError(t, err)
		assert.False(t, rep.Plugin != "upgraded" || rep.PreviousVersion != "0" || rep.Row != Unchanged, "got plugin %s from %q, row %s; want upgraded from 0, row unchanged", rep.Plugin, rep.PreviousVersion, rep.Row)
		got, _ := os.ReadFile(PluginPath(home))
		assert.Equal(t, Source(), got, "plugin file not upgraded")
	})
	t.Run("NewBinaryReplacesRow", func(t *testing.T) {
		before, _ := os.ReadFile(PatchPath(home))
		o2 := o
		o2.Binary = fakeBinary(t)
		rep, err := Install(o2)
		require.NoError(t, err)
		bak, _ := os.ReadFile(BackupPath(home))
		assert.False(t, rep.Row != Replaced || rep.Backup != BackupPath(home) || !bytes.Equal(bak, before) || rep.Previous == nil || rep.Previous.Config.Binary != o.Binary, "got row %s backup %q (holds the old file: %v), previous %+v", rep.Row, rep.Backup, bytes.Equal(bak, before), rep.Previous)
	})
}

func TestInstallKeepsModeAndBacksUp(t *testing.T) {
	home := t.TempDir()
	old := readInput(t, "other-rows")
	os.WriteFile(PatchPath(home), old, 0o644)
	rep, err := Install(Options{DSHHome: home, Binary: fakeBinary(t), Root: "rel/root"})
	require.NoError(t, err)
	m := mode(t, PatchPath(home))
	assert.EqualValues(t, 0o644, m, "mode: got %o, want 644 (kept)", m)
	bak, _ := os.ReadFile(BackupPath(home))
	assert.Equal(t, old, bak, "backup does not hold the previous file")
	assert.False(t, !filepath.IsAbs(rep.Entry.Config.Root) || !strings.HasSuffix(rep.Entry.Config.Root, "/rel/root"), "root: got %q, want it absolute", rep.Entry.Config.Root)
	un, err := Uninstall(Options{DSHHome: home})
	require.NoError(t, err)
	got, _ := os.ReadFile(PatchPath(home))
	assert.False(t, !bytes.Equal(got, old) || un.Row != Removed, "uninstall: got row %s, file restored %v", un.Row, bytes.Equal(got, old))
}

func TestInstallRefused(t *testing.T) {
	t.Run("Malformed", func(t *testing.T) {
		home := t.TempDir()
		bad := readInput(t, "malformed")
		os.WriteFile(PatchPath(home), bad, 0o640)
		_, err := Install(Options{DSHHome: home, Binary: fakeBinary(t)})
		var pe *PatchError
		require.True(t, errors.As(err, &pe), "got %v, want a *PatchError for %s line 3", err, PatchPath(home))
		require.Equal(t, PatchPath(home), pe.Path, "got %v, want a *PatchError for %s line 3", err, PatchPath(home))
		require.EqualValues(t, 3, pe.Line, "got %v, want a *PatchError for %s line 3", err, PatchPath(home))
		got, _ := os.ReadFile(PatchPath(home))
		assert.False(t, !bytes.Equal(got, bad) || mode(t, PatchPath(home)) != 0o640, "the refused file was changed")
		assert.False(t, exists(BackupPath(home)) || exists(filepath.Dir(PluginPath(home))), "a refused install wrote a backup or the plugin")
	})
	t.Run("NoBinary", func(t *testing.T) {
		_, err := Install(Options{DSHHome: t.TempDir(), Binary: "/nonexistent/dshmem"})
		require.Error(t, err, "got %v, want an error naming the binary", err)
		require.Contains(t, err.Error(), "/nonexistent/dshmem", "got %v, want an error naming the binary", err)
	})
	t.Run("GoRunWarns", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "go-build1234", "b001", "exe", "dshmem")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
		rep, err := Install(Options{DSHHome: t.TempDir(), Binary: p})
		require.NoError(t, err)
		assert.False(t, len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "go build -o ~/bin/dshmem ./cmd/dshmem"), "got warnings %q, want the go build advice", rep.Warnings)
	})
}

func TestUninstall(t *testing.T) {
	home, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "global.md"), []byte("memory\n"), 0o600)
	if _, err := Install(Options{DSHHome: home, Root: root, Binary: fakeBinary(t)}); err != nil {
		t.Fatal(err)
	}
	t.Run("RemovesRowAndFiles", func(t *testing.T) {
		rep, err := Uninstall(Options{DSHHome: home})
		require.NoError(t, err)
		assert.False(t, rep.Row != Removed || !rep.FileRemoved || rep.Backup != BackupPath(home) || exists(PatchPath(home)), "got row %s, file removed %v, backup %q; want removed, the file (only our row) gone, a backup", rep.Row, rep.FileRemoved, rep.Backup)
		assert.False(t, exists(filepath.Dir(PluginPath(home))) || len(rep.Removed) != 2, "got removed %q; want plugin.mjs and its directory", rep.Removed)
		if b, err := os.ReadFile(filepath.Join(root, "global.md")); err != nil || string(b) != "memory\n" {
			t.Errorf("the memory root was touched: %v", err)
		}
	})
	t.Run("NotInstalled", func(t *testing.T) {
		os.Remove(BackupPath(home))
		rep, err := Uninstall(Options{DSHHome: home})
		assert.False(t, err != nil || rep.Row != Absent || rep.Backup != "" || exists(BackupPath(home)) || len(rep.Removed) != 0, "got %+v, %v; want absent and nothing done", rep, err)
	})
	t.Run("KeepsOtherFiles", func(t *testing.T) {
		if _, err := Install(Options{DSHHome: home, Root: root, Binary: fakeBinary(t)}); err != nil {
			t.Fatal(err)
		}
		mine := filepath.Join(home, DirName, "notes.txt")
		os.WriteFile(mine, []byte("x"), 0o600)
		rep, err := Uninstall(Options{DSHHome: home})
		require.NoError(t, err)
		assert.False(t, !exists(mine) || exists(PluginPath(home)) || len(rep.Kept) != 1, "got removed %q kept %q; want plugin.mjs removed and notes.txt kept", rep.Removed, rep.Kept)
	})
}

func TestReadStatus(t *testing.T) {
	ctx := context.Background()
	home, root := t.TempDir(), t.TempDir()
	t.Run("NotInstalled", func(t *testing.T) {
		st, err := ReadStatus(ctx, Options{DSHHome: home, Root: root})
		require.NoError(t, err, "got %+v, %v", st, err)
		require.False(t, st.Installed, "got %+v, %v", st, err)
		require.False(t, st.Plugin.Present, "got %+v, %v", st, err)
		require.False(t, st.Server.Running, "got %+v, %v", st, err)
		require.False(t, st.Sessions.Exists, "got %+v, %v", st, err)
	})
	bin := fakeBinary(t)
	if _, err := Install(Options{DSHHome: home, Root: root, Binary: bin}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"--proj-a--/s1", "--proj-a--/s2", "--proj-b--/s3"} {
		os.MkdirAll(filepath.Join(home, "sessions", s), 0o700)
	}
	t.Run("Installed", func(t *testing.T) {
		st, err := ReadStatus(ctx, Options{DSHHome: home, Root: root})
		require.NoError(t, err)
		if !st.Installed || st.Disabled || !st.Plugin.Current || st.Plugin.Version != Version() || st.Root != root || st.RootMismatch ||
			st.Binary == nil || !st.Binary.Executable || st.Server.Running || !strings.Contains(st.Server.Detail, "the plugin starts one") ||
			st.Sessions.Projects != 2 || st.Sessions.Sessions != 3 {
			b, _ := json.MarshalIndent(st, "", "  ")
			t.Errorf("got %s", b)
		}
	})
	t.Run("RootMismatchAndOldPlugin", func(t *testing.T) {
		os.WriteFile(PluginPath(home), []byte("export const version = '0';\n"), 0o600)
		st, err := ReadStatus(ctx, Options{DSHHome: home, Root: t.TempDir()})
		assert.False(t, err != nil || !st.RootMismatch || st.Plugin.Current || st.Plugin.Version != "0", "got mismatch %v current %v version %q, %v", st.RootMismatch, st.Plugin.Current, st.Plugin.Version, err)
	})
	t.Run("ServerAnswers", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/healthz" || r.Header.Get("Authorization") != "Bearer tok" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			json.NewEncoder(w).Encode(httpapi.Health{OK: true, API: "v1", PID: 4242})
		}))
		defer srv.Close()
		addr := strings.TrimPrefix(srv.URL, "http://")
		require.NoError(t, httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: addr, PID: 4242, Token: "tok"}))
		st, _ := ReadStatus(ctx, Options{DSHHome: home, Root: root})
		assert.False(t, !st.Server.Running || st.Server.Addr != addr || st.Server.PID != 4242, "got %+v, want running at %s pid 4242", st.Server, addr)
		httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: addr, PID: 4242, Token: "wrong"})
		if st, _ := ReadStatus(ctx, Options{DSHHome: home, Root: root}); st.Server.Running {
			t.Errorf("wrong token: got running")
		}
		srv.Close()
		httpapi.WriteServeFile(root, httpapi.ServeInfo{Addr: addr, PID: 4242, Token: "tok"})
		if st, _ := ReadStatus(ctx, Options{DSHHome: home, Root: root}); st.Server.Running || !strings.Contains(st.Server.Detail, "stale") {
			t.Errorf("server gone: got %+v", st.Server)
		}
	})
	t.Run("Disabled", func(t *testing.T) {
		f, _ := os.OpenFile(PatchPath(home), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("- id: dshmem\n  disabled: true\n")
		f.Close()
		st, _ := ReadStatus(ctx, Options{DSHHome: home, Root: root})
		assert.False(t, !st.Installed || !st.Disabled || st.DisabledAt == 0, "got installed %v disabled %v at %d", st.Installed, st.Disabled, st.DisabledAt)
	})
	t.Run("Broken", func(t *testing.T) {
		os.WriteFile(PatchPath(home), []byte("- [\n"), 0o600)
		st, err := ReadStatus(ctx, Options{DSHHome: home, Root: root})
		assert.False(t, err != nil || st.Installed || !strings.Contains(st.Problem, "line 1"), "got installed %v problem %q, %v", st.Installed, st.Problem, err)
	})
}

// TestInstallThroughSymlink: a cordis.patch.yml that is a link to a file
// elsewhere (a dotfiles repository) is edited where it lives.
func TestInstallThroughSymlink(t *testing.T) {
	home, dots := t.TempDir(), t.TempDir()
	real := filepath.Join(dots, "cordis.patch.yml")
	os.WriteFile(real, []byte("- id: shell\n"), 0o600)
	require.NoError(t, os.Symlink(real, PatchPath(home)))
	if _, err := Install(Options{DSHHome: home, Binary: fakeBinary(t)}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(PatchPath(home)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file")
	}
	b, _ := os.ReadFile(real)
	require.Contains(t, string(b), string([]byte("id: dshmem")), "the linked file lacks our row:\n%s", b)
	if _, err := Uninstall(Options{DSHHome: home}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "- id: shell\n" {
		t.Errorf("after uninstall got %q", b)
	}
	// A link to a file that held only our row keeps a file: "[]".
	os.WriteFile(real, nil, 0o600)
	Install(Options{DSHHome: home, Binary: fakeBinary(t)})
	rep, err := Uninstall(Options{DSHHome: home})
	if b, _ := os.ReadFile(real); err != nil || string(b) != "[]\n" || !rep.EmptyList || rep.FileRemoved {
		t.Errorf("got %q, %+v, %v; want the linked file holding []", b, rep, err)
	}
}
