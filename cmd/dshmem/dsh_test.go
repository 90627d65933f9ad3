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
)

// fakeDshmem is an executable file that stands for a built dshmem in the
// tests that do not start the host.
func fakeDshmem(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "dshmem")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
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
	if code != 0 || !strings.Contains(out, "added at line 5") || !strings.Contains(out, plugin.BackupName) || !strings.Contains(out, "written (version "+plugin.Version()+")") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	t.Run("RootIsDshHomeMemory", func(t *testing.T) {
		if want := "root     " + filepath.Join(home, "memory"); !strings.Contains(out, want) {
			t.Errorf("got\n%s\nwant %q", out, want)
		}
	})
	t.Run("Again", func(t *testing.T) {
		before, _ := os.ReadFile(patch)
		os.Remove(filepath.Join(home, plugin.BackupName))
		code, out, _ := cli(t, "", "dsh", "install", "--dsh-home", home, "--binary", bin)
		after, _ := os.ReadFile(patch)
		if code != 0 || !strings.HasPrefix(out, "already installed") || !bytes.Equal(before, after) {
			t.Errorf("exit %d, file unchanged %v\n%s", code, bytes.Equal(before, after), out)
		}
		if _, err := os.Stat(filepath.Join(home, plugin.BackupName)); err == nil {
			t.Errorf("a second install wrote a backup")
		}
	})
	t.Run("StatusJSON", func(t *testing.T) {
		code, out, errs := cli(t, "", "dsh", "status", "--dsh-home", home, "--json")
		var st plugin.Status
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		if !st.Installed || st.RowLine != 5 || !st.Plugin.Current || st.Root != filepath.Join(home, "memory") || st.Binary == nil || st.Binary.Path != bin || st.Server.Running {
			t.Errorf("got %s", out)
		}
		for _, k := range []string{`"installed"`, `"plugin"`, `"binaryVersion"`, `"root"`, `"server"`, `"sessions"`} {
			if !strings.Contains(out, k) {
				t.Errorf("status --json lacks %s", k)
			}
		}
	})
	t.Run("StatusRootMismatch", func(t *testing.T) {
		code, out, _ := cli(t, "", "--root", t.TempDir(), "dsh", "status", "--dsh-home", home)
		if code != 0 || !strings.Contains(out, "installed  yes") || !strings.Contains(out, "warning: this CLI resolves") {
			t.Errorf("exit %d\n%s", code, out)
		}
	})
	t.Run("Uninstall", func(t *testing.T) {
		code, out, errs := cli(t, "", "dsh", "uninstall", "--dsh-home", home)
		got, _ := os.ReadFile(patch)
		if code != 0 || string(got) != mine || !strings.Contains(out, "removed from line 5") || !strings.Contains(out, "memory root is not touched") {
			t.Errorf("exit %d, file\n%s\n%s%s", code, got, out, errs)
		}
		code, out, _ = cli(t, "", "dsh", "uninstall", "--dsh-home", home)
		if code != 0 || !strings.Contains(out, "not installed") {
			t.Errorf("second uninstall: exit %d\n%s", code, out)
		}
		code, out, _ = cli(t, "", "dsh", "status", "--dsh-home", home)
		if code != 0 || !strings.Contains(out, "installed  no") {
			t.Errorf("status: exit %d\n%s", code, out)
		}
	})
}

func TestDSHRootRules(t *testing.T) {
	bin := fakeDshmem(t)
	root := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, "", append(args, "--json")...)
		var rep plugin.InstallReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		return rep.Entry.Config.Root
	}
	t.Run("DSHHomeFlag", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", "")
		t.Setenv("DSH_HOME", t.TempDir()) // --dsh-home wins over it
		home := t.TempDir()
		if got := root(t, "dsh", "install", "--dsh-home", home, "--binary", bin); got != filepath.Join(home, "memory") {
			t.Errorf("got %s, want %s/memory", got, home)
		}
	})
	t.Run("RootFlag", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", t.TempDir())
		r := t.TempDir()
		if got := root(t, "--root", r, "dsh", "install", "--dsh-home", t.TempDir(), "--binary", bin); got != r {
			t.Errorf("got %s, want %s", got, r)
		}
	})
	t.Run("EnvRoot", func(t *testing.T) {
		r := t.TempDir()
		t.Setenv("DSH_MEMORY_ROOT", r)
		if got := root(t, "dsh", "install", "--dsh-home", t.TempDir(), "--binary", bin); got != r {
			t.Errorf("got %s, want %s", got, r)
		}
	})
	t.Run("DSHHomeEnv", func(t *testing.T) {
		t.Setenv("DSH_MEMORY_ROOT", "")
		home := t.TempDir()
		t.Setenv("DSH_HOME", home)
		if got := root(t, "dsh", "install", "--binary", bin); got != filepath.Join(home, "memory") {
			t.Errorf("got %s, want %s/memory", got, home)
		}
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
		if code != 1 || !strings.Contains(errs, patch+" line 2") || !strings.Contains(errs, "fix or move the file, then run 'dshmem dsh "+sub+"' again") {
			t.Errorf("%s: exit %d, stderr %s", sub, code, errs)
		}
	}
	if got, _ := os.ReadFile(patch); string(got) != bad {
		t.Errorf("the refused file changed")
	}
	if _, err := os.Stat(filepath.Join(home, plugin.DirName)); err == nil {
		t.Errorf("a refused install wrote the plugin")
	}
	code, out, _ := cli(t, "", "dsh", "status", "--dsh-home", home)
	if code != 0 || !strings.Contains(out, "installed  unknown") || !strings.Contains(out, "line 2") {
		t.Errorf("status: exit %d\n%s", code, out)
	}
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
		if code != tc.code || !strings.Contains(got, tc.out) {
			t.Errorf("%q: exit %d, want %d with %q\nstdout %s\nstderr %s", tc.args, code, tc.code, tc.out, out, errs)
		}
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
		if err != nil {
			t.Fatalf("dshmem %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	dshmem("dsh", "install", "--dsh-home", home)
	if out := dshmem("dsh", "install", "--dsh-home", home); !strings.HasPrefix(out, "already installed") {
		t.Errorf("second install:\n%s", out)
	}
	src, _ := os.ReadFile(patch)
	if n := bytes.Count(src, []byte("id: dshmem")); n != 1 || !bytes.HasPrefix(src, []byte(mine)) {
		t.Fatalf("got %d dshmem rows, the user's rows kept %v:\n%s", n, bytes.HasPrefix(src, []byte(mine)), src)
	}
	dump := host.DumpConfig(t, home)
	if dump.Code != 0 || strings.Count(dump.Output, "- id: dshmem") != 1 || !strings.Contains(dump.Output, plugin.PluginPath(home)) || !strings.Contains(dump.Output, bin) {
		t.Fatalf("dump-config: exit %d, want one dshmem entry naming %s and %s:\n%s", dump.Code, plugin.PluginPath(home), bin, dump.Output)
	}
	if r := host.RunOne(t, home, project, fake, "hello with dshmem"); r.Code != 0 || !strings.Contains(r.Output, "hello with dshmem") {
		t.Fatalf("host with dshmem's row: exit %d\n%s", r.Code, r.Output)
	}
	if b, _ := os.ReadFile(fake.Log); !bytes.Contains(b, []byte("hello with dshmem")) {
		t.Errorf("the prompt never reached the model")
	}

	os.Rename(plugin.PluginPath(home), plugin.PluginPath(home)+".away")
	if r := host.RunOne(t, home, project, fake, "no plugin file"); r.Code == 0 {
		t.Fatalf("host booted with a row whose file is missing: the row is not read\n%s", r.Output)
	}
	os.Rename(plugin.PluginPath(home)+".away", plugin.PluginPath(home))

	dshmem("dsh", "uninstall", "--dsh-home", home)
	if got, _ := os.ReadFile(patch); string(got) != mine {
		t.Errorf("after uninstall got\n%s\nwant the user's file back\n%s", got, mine)
	}
	if dump := host.DumpConfig(t, home); dump.Code != 0 || strings.Contains(dump.Output, "dshmem") {
		t.Errorf("dump-config after uninstall: exit %d\n%s", dump.Code, dump.Output)
	}
	if r := host.RunOne(t, home, project, fake, "hello without dshmem"); r.Code != 0 {
		t.Fatalf("host after uninstall: exit %d\n%s", r.Code, r.Output)
	}
}
