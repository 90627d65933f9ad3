package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dshmem/observer/dsh/plugin"
	"dshmem/observer/dsh/plugin/hosttest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDshmem is an executable file that stands for a built dshmem in the
// tests that do not start the host.
func fakeDshmem(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dshmem")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	return p
}

func TestDSHInstallCLI(t *testing.T) {
	t.Setenv("DSH_MEMORY_ROOT", "")
	t.Setenv("DSH_HOME", "")
	home, bin := t.TempDir(), fakeDshmem(t)
	patch := filepath.Join(home, plugin.PatchName)
	mine := "# my rows\n- id: shell\n  config: {timeout: 30000}\n"
	os.WriteFile(patch, []byte(mine), 0o600)

	code, out, errs := cli(t, "", "dsh", "install", "--dsh-home", home, "--binary", bin)
	require.EqualValues(t, 0, code, "exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, "added at line 5", "exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, plugin.BackupName, "exit %d\n%s%s", code, out, errs)
	require.Contains(t, out, "written (version "+plugin.Version()+")", "exit %d\n%s%s", code, out, errs)
	t.Run("RootIsDshHomeMemory", func(t *testing.T) {
		want := "root     " + filepath.Join(home, "memory")
		assert.Contains(t, out, want, "got\n%s\nwant %q", out, want)
	})
	t.Run("Again", func(t *testing.T) {
		before, _ := os.ReadFile(patch)
		os.Remove(filepath.Join(home, plugin.BackupName))
		code, out, _ := cli(t, "", "dsh", "install", "--dsh-home", home, "--binary", bin)
		after, _ := os.ReadFile(patch)
		assert.False(t, code != 0 || !strings.HasPrefix(out, "already installed") || !bytes.Equal(before, after), "exit %d, file unchanged %v\n%s", code, bytes.Equal(before, after), out)
		_, err := os.Stat(filepath.Join(home, plugin.BackupName))
		assert.Error(t, err, "a second install wrote a backup")
	})
	t.Run("StatusJSON", func(t *testing.T) {
		code, out, errs := cli(t, "", "dsh", "status", "--dsh-home", home, "--json")
		var st plugin.Status
		require.EqualValues(t, 0, code, "exit %d\n%s%s", code, out, errs)
		require.Nil(t, json.Unmarshal([]byte(out), &st), "exit %d\n%s%s", code, out, errs)
		assert.False(t, !st.Installed || st.RowLine != 5 || !st.Plugin.Current || st.Root != filepath.Join(home, "memory") || st.Binary == nil || st.Binary.Path != bin || st.Server.Running, "got %s", out)
		for _, k := range []string{`"installed"`, `"plugin"`, `"binaryVersion"`, `"root"`, `"server"`, `"sessions"`} {
			assert.Contains(t, out, k, "status --json lacks %s", k)
		}
	})
	t.Run("StatusRootMismatch", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", t.TempDir(), "dsh", "status", "--dsh-home", home)
		assert.False(t, code != 0 || !strings.Contains(out, "installed  yes") || !strings.Contains(out, "warning: this CLI resolves"), "exit %d\n%s", code, out)
	})
	t.Run("Uninstall", func(t *testing.T) {
		code, out, errs := cli(t, "", "dsh", "uninstall", "--dsh-home", home)
		got, _ := os.ReadFile(patch)
		assert.False(t, code != 0 || string(got) != mine || !strings.Contains(out, "removed from line 5") || !strings.Contains(out, "memory root is not touched"), "exit %d, file\n%s\n%s%s", code, got, out, errs)
		code, out, _ = cli(t, "", "dsh", "uninstall", "--dsh-home", home)
		assert.False(t, code != 0 || !strings.Contains(out, "not installed"), "second uninstall: exit %d\n%s", code, out)
		code, out, _ = cli(t, "", "dsh", "status", "--dsh-home", home)
		assert.False(t, code != 0 || !strings.Contains(out, "installed  no"), "status: exit %d\n%s", code, out)
	})
}

func TestDSHRootRules(t *testing.T) {
	bin := fakeDshmem(t)
	root := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, "", append(args, "--json")...)
		var rep plugin.InstallReport
		require.EqualValues(t, 0, code, "exit %d\n%s%s", code, out, errs)
		require.Nil(t, json.Unmarshal([]byte(out), &rep), "exit %d\n%s%s", code, out, errs)
		return rep.Entry.Config.Root
	}
	t.Run("DSHHomeFlag", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", "")
		t.Setenv("DSH_HOME", t.TempDir()) // --dsh-home wins over it
		home := t.TempDir()
		got := root(t, "dsh", "install", "--dsh-home", home, "--binary", bin)
		assert.Equal(t, filepath.Join(home, "memory"), got, "got %s, want %s/memory", got, home)
	})
	t.Run("RootFlag", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", t.TempDir())
		r := t.TempDir()
		got := root(t, "--root", r, "dsh", "install", "--dsh-home", t.TempDir(), "--binary", bin)
		assert.Equal(t, r, got, "got %s, want %s", got, r)
	})
	t.Run("EnvRoot", func(t *testing.T) {
		r := t.TempDir()
		t.Setenv("DSH_MEMORY_ROOT", r)
		got := root(t, "dsh", "install", "--dsh-home", t.TempDir(), "--binary", bin)
		assert.Equal(t, r, got, "got %s, want %s", got, r)
	})
	t.Run("DSHHomeEnv", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", "")
		home := t.TempDir()
		t.Setenv("DSH_HOME", home)
		got := root(t, "dsh", "install", "--binary", bin)
		assert.Equal(t, filepath.Join(home, "memory"), got, "got %s, want %s/memory", got, home)
	})
}

func TestDSHRefusesMalformed(t *testing.T) {
	home := t.TempDir()
	patch := filepath.Join(home, plugin.PatchName)
	bad := "- id: shell\n- insert: [ {id: x\n- id: y\n"
	os.WriteFile(patch, []byte(bad), 0o600)
	for _, sub := range []string{"install", "uninstall"} {
		code, _, errs := cli(t, "", "dsh", sub, "--dsh-home", home, "--binary", fakeDshmem(t))
		if sub == "uninstall" {
			code, _, errs = cli(t, "", "dsh", sub, "--dsh-home", home)
		}
		assert.False(t, code != 1 || !strings.Contains(errs, patch+" line 2") || !strings.Contains(errs, "fix or move the file, then run 'dshmem dsh "+sub+"' again"), "%s: exit %d, stderr %s", sub, code, errs)
	}
	got, _ := os.ReadFile(patch)
	assert.Equal(t, bad, string(got), "the refused file changed")
	_, err := os.Stat(filepath.Join(home, plugin.DirName))
	assert.Error(t, err, "a refused install wrote the plugin")
	code, out, _ := cli(t, "", "dsh", "status", "--dsh-home", home)
	assert.False(t, code != 0 || !strings.Contains(out, "installed  unknown") || !strings.Contains(out, "line 2"), "status: exit %d\n%s", code, out)
}

func TestDSHUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"dsh"}, 2, "needs a subcommand: install, uninstall or status"},
		{[]string{"dsh", "instal"}, 2, `unknown subcommand "instal"`},
		{[]string{"dsh", "status", "extra"}, 2, "takes no arguments"},
		{[]string{"dsh", "status", "--binary", "/x"}, 2, "-binary"},
		{[]string{"dsh", "--help"}, 0, "disabled: true"},
		{[]string{"help", "dsh"}, 0, "uninstall"},
		{[]string{"dsh", "install", "--help"}, 0, "-binary"},
		{[]string{"--version"}, 0, "dshmem " + version + " (host plugin " + plugin.Version() + ")\n"},
		{[]string{"version"}, 0, "dshmem " + version + " (host plugin " + plugin.Version() + ")\n"},
	} {
		code, out, errs := cli(t, "", tc.args...)
		got := out
		if tc.code != 0 {
			got = errs
		}
		assert.False(t, code != tc.code || !strings.Contains(got, tc.out), "%q: exit %d, want %d with %q\nstdout %s\nstderr %s", tc.args, code, tc.code, tc.out, out, errs)
	}
}

// TestDSHHostBoots installs with the real binary into a DSH home holding
// a user's file, and boots the real host: with our row (installed twice:
// one row), with our row but its file gone (the host refuses: proof that
// it reads the row), and after uninstall.
func TestDSHHostBoots(t *testing.T) {
	host := hosttest.Find(t)
	bin := buildDshmem(t)
	fake := host.StartFake(t)
	home, project := t.TempDir(), t.TempDir()
	t.Cleanup(func() { hosttest.StopServer(filepath.Join(home, "memory")) })
	patch := filepath.Join(home, plugin.PatchName)
	mine := "# my machine-local rows\n- id: session-telemetry-otel\n  disabled: true\n"
	os.WriteFile(patch, []byte(mine), 0o600)
	dshmem := func(args ...string) string {
		t.Helper()
		out, err := execOut(bin, args...)
		require.NoError(t, err, "dshmem %s: %v\n%s", strings.Join(args, " "), err, out)
		return out
	}
	dshmem("dsh", "install", "--dsh-home", home)
	out := dshmem("dsh", "install", "--dsh-home", home)
	assert.True(t, strings.HasPrefix(out, "already installed"), "second install:\n%s", out)
	src, _ := os.ReadFile(patch)
	n := bytes.Count(src, []byte("id: dshmem"))
	require.EqualValues(t, 1, n, "got %d dshmem rows, the user's rows kept %v:\n%s", n, bytes.HasPrefix(src, []byte(mine)), src)
	require.True(t, bytes.HasPrefix(src, []byte(mine)), "got %d dshmem rows, the user's rows kept %v:\n%s", n, bytes.HasPrefix(src, []byte(mine)), src)
	dump := host.DumpConfig(t, home)
	require.EqualValues(t, 0, dump.Code, "dump-config: exit %d, want one dshmem entry naming %s and %s:\n%s", dump.Code, plugin.PluginPath(home), bin, dump.Output)
	require.EqualValues(t, 1, strings.Count(dump.Output, "- id: dshmem"), "dump-config: exit %d, want one dshmem entry naming %s and %s:\n%s", dump.Code, plugin.PluginPath(home), bin, dump.Output)
	require.Contains(t, dump.Output, plugin.PluginPath(home), "dump-config: exit %d, want one dshmem entry naming %s and %s:\n%s", dump.Code, plugin.PluginPath(home), bin, dump.Output)
	require.Contains(t, dump.Output, bin, "dump-config: exit %d, want one dshmem entry naming %s and %s:\n%s", dump.Code, plugin.PluginPath(home), bin, dump.Output)
	r := host.RunOne(t, home, project, fake, "hello with dshmem")
	require.EqualValues(t, 0, r.Code, "host with dshmem's row: exit %d\n%s", r.Code, r.Output)
	require.Contains(t, r.Output, "hello with dshmem", "host with dshmem's row: exit %d\n%s", r.Code, r.Output)
	b, _ := os.ReadFile(fake.Log)
	assert.Contains(t, string(b), string([]byte("hello with dshmem")), "the prompt never reached the model")

	os.Rename(plugin.PluginPath(home), plugin.PluginPath(home)+".away")
	if r := host.RunOne(t, home, project, fake, "no plugin file"); r.Code == 0 {
		t.Fatalf("host booted with a row whose file is missing: the row is not read\n%s", r.Output)
	}
	os.Rename(plugin.PluginPath(home)+".away", plugin.PluginPath(home))

	dshmem("dsh", "uninstall", "--dsh-home", home)
	got, _ := os.ReadFile(patch)
	assert.Equal(t, mine, string(got), "after uninstall got\n%s\nwant the user's file back\n%s", got, mine)
	if dump := host.DumpConfig(t, home); dump.Code != 0 || strings.Contains(dump.Output, "dshmem") {
		t.Errorf("dump-config after uninstall: exit %d\n%s", dump.Code, dump.Output)
	}
	if r := host.RunOne(t, home, project, fake, "hello without dshmem"); r.Code != 0 {
		t.Fatalf("host after uninstall: exit %d\n%s", r.Code, r.Output)
	}
}
