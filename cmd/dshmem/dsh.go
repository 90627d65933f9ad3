package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"dshmem/observer/dsh/plugin"
)

func init() {
	register(&command{
		name:    "dsh",
		summary: "install, remove or check dshmem's plugin in the DSH host",
		usage: `dsh install|uninstall|status [--dsh-home DIR] [--json]

Connects dshmem to the DSH host (DeepSeek Harness), so memory reaches the
model. The host reads <dsh-home>/cordis.patch.yml in every profile on every
boot (and again when it changes, while 'dsh web' runs).

  install [--binary PATH]
      Writes the plugin to <dsh-home>/dshmem/plugin.mjs and one row to
      <dsh-home>/cordis.patch.yml:
        # dshmem: long-term memory for DSH (written by ` + "`dshmem dsh install`" + `; …)
        - insert:
            - id: dshmem
              name: <dsh-home>/dshmem/plugin.mjs
              config:
                binary: <this dshmem, absolute>
                root: <the memory root, absolute>
                dshHome: <dsh-home>
      Every other row, comment and blank line of that file is kept byte for
      byte, and the previous file is copied to cordis.patch.yml.dshmem-bak
      first. A file that does not parse, or is not a sequence of rows, is
      refused, naming its line, and left as it is. Installing again changes
      nothing; a newer dshmem upgrades the plugin file and the row.
  uninstall
      Removes exactly that row (backup first), then plugin.mjs and the
      <dsh-home>/dshmem/ folder if nothing else is in it. The memory root
      is never touched: what dshmem remembered stays.
  status
      Installed or not (and switched off?), the plugin's version against
      this binary's, the root the row records, the binary it runs, whether
      a dshmem server answers, and the host's sessions folder.

What the host sees: an entry with id dshmem in every profile's plugin
tree. The plugin runs the recorded binary on the recorded root (starting
'dshmem serve' when none answers) and adds memory to the model's context.

To switch it off: 'dshmem dsh uninstall', or keep the row and add
"disabled: true" to its entry (the host then skips it; install keeps it).

--dsh-home DIR is the host's home: default $DSH_HOME, else ~/.dsh. The
root recorded is --root (before 'dsh'), else $DSH_MEMORY_ROOT, else
<dsh-home>/memory — so --dsh-home DIR alone records DIR/memory, as
DSH_HOME=DIR would. --binary PATH records another dshmem than this one:
install from a built binary (go build -o ~/bin/dshmem ./cmd/dshmem), not
from 'go run', whose binary is deleted when it exits.
`,
		run: runDSH,
	})
}

func runDSH(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["dsh"]
	if len(args) == 0 {
		return usageError{"needs a subcommand: install, uninstall or status"}
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		return flag.ErrHelp
	case "install", "uninstall", "status":
	default:
		return usageError{fmt.Sprintf("unknown subcommand %q: use install, uninstall or status", sub)}
	}
	fs := newFlags(c)
	home := fs.String("dsh-home", "", "the DSH host's home (default $DSH_HOME, else ~/.dsh)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var binary *string
	if sub == "install" {
		binary = fs.String("binary", "", "the dshmem binary the host runs (default: this binary)")
	}
	if err := env.parseNoArgs(c, fs, args[1:]); err != nil {
		return err
	}
	o := plugin.Options{DSHHome: *home, Root: env.root}
	if *home != "" && env.rootFlag == "" && os.Getenv("DSH_MEMORY_ROOT") == "" {
		o.Root = filepath.Join(*home, "memory") // the rule of $DSH_HOME/memory
	}
	var rep any
	var err error
	switch sub {
	case "install":
		o.Binary = *binary
		var r *plugin.InstallReport
		if r, err = plugin.Install(o); err == nil {
			rep = r
			if !*asJSON {
				printInstall(env.stdout, r)
			}
		}
	case "uninstall":
		var r *plugin.UninstallReport
		if r, err = plugin.Uninstall(o); err == nil {
			rep = r
			if !*asJSON {
				printUninstall(env.stdout, r, o.Root)
			}
		}
	case "status":
		var r *plugin.Status
		if r, err = plugin.ReadStatus(ctx, o); err == nil {
			rep = r
			if !*asJSON {
				printStatus(env.stdout, r)
			}
		}
	}
	var pe *plugin.PatchError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %w; fix or move the file, then run 'dshmem dsh %s' again", sub, err, sub)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", sub, err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return nil
}

func printInstall(w io.Writer, r *plugin.InstallReport) {
	if r.Row == plugin.Unchanged && r.Plugin == "unchanged" {
		fmt.Fprintf(w, "already installed in %s: nothing changed\n", r.DSHHome)
	} else {
		fmt.Fprintf(w, "installed dshmem into the DSH home %s\n", r.DSHHome)
	}
	row := fmt.Sprintf("%s at line %d of %s", r.Row, r.RowLine, r.PatchFile)
	switch {
	case r.Created:
		row += " (new file)"
	case r.Row == plugin.Unchanged:
		row = fmt.Sprintf("at line %d of %s, as this binary would write it", r.RowLine, r.PatchFile)
	}
	fmt.Fprintf(w, "  row      %s\n", row)
	if r.Backup != "" {
		fmt.Fprintf(w, "  backup   the previous file is in %s\n", r.Backup)
	}
	switch r.Plugin {
	case "upgraded":
		fmt.Fprintf(w, "  plugin   %s upgraded from version %s to %s\n", r.PluginFile, r.PreviousVersion, r.Version)
	default:
		fmt.Fprintf(w, "  plugin   %s %s (version %s)\n", r.PluginFile, r.Plugin, r.Version)
	}
	fmt.Fprintf(w, "  binary   %s\n", r.Entry.Config.Binary)
	fmt.Fprintf(w, "  root     %s\n", r.Entry.Config.Root)
	if p := r.Previous; p != nil && r.Row == plugin.Replaced {
		if p.Config.Binary != r.Entry.Config.Binary {
			fmt.Fprintf(w, "           (the row named binary %s before)\n", orNone(p.Config.Binary))
		}
		if p.Config.Root != r.Entry.Config.Root {
			fmt.Fprintf(w, "           (the row named root %s before)\n", orNone(p.Config.Root))
		}
	}
	if r.DisabledAt > 0 {
		fmt.Fprintf(w, "note: the plugin stays switched off (disabled: true at line %d, kept as you set it); delete that line to switch it on\n", r.DisabledAt)
	}
	for _, l := range r.Patches {
		fmt.Fprintf(w, "note: your row at line %d patches id dshmem; kept as it is\n", l)
	}
	if len(r.Dropped) > 0 {
		fmt.Fprintf(w, "note: the old row also held %s, which dshmem does not write; it is in the backup\n", strings.Join(r.Dropped, ", "))
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if r.Row != plugin.Unchanged || r.Plugin != "unchanged" {
		fmt.Fprintln(w, "The host loads it when it next starts ('dsh web' at once). Check with 'dshmem dsh status'.")
	}
}

func printUninstall(w io.Writer, r *plugin.UninstallReport, root string) {
	if r.Row == plugin.Absent {
		fmt.Fprintf(w, "dshmem is not installed in %s: no dshmem row in %s\n", r.DSHHome, r.PatchFile)
	} else {
		fmt.Fprintf(w, "uninstalled dshmem from the DSH home %s\n", r.DSHHome)
		row := fmt.Sprintf("removed from line %d of %s", r.RowLine, r.PatchFile)
		switch {
		case r.FileRemoved:
			row += "; the file held nothing else, so it is gone"
		case r.EmptyList:
			row += `; no row is left, so "[]" was added (the host refuses a file without a sequence)`
		}
		fmt.Fprintf(w, "  row      %s\n", row)
		fmt.Fprintf(w, "  backup   the previous file is in %s\n", r.Backup)
	}
	for _, p := range r.Removed {
		fmt.Fprintf(w, "  removed  %s\n", p)
	}
	for _, p := range r.Kept {
		fmt.Fprintf(w, "  kept     %s (not dshmem's)\n", p)
	}
	for _, l := range r.Patches {
		fmt.Fprintf(w, "note: your row at line %d patches id dshmem; kept (the host logs that it finds no such entry; delete it if you like)\n", l)
	}
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	fmt.Fprintf(w, "The memory root is not touched: %s\n", root)
}

func printStatus(w io.Writer, s *plugin.Status) {
	fmt.Fprintf(w, "dshmem in the DSH home %s\n", s.DSHHome)
	switch {
	case s.Installed:
		fmt.Fprintf(w, "  installed  yes: row at line %d of %s\n", s.RowLine, s.PatchFile)
	case s.Problem != "":
		fmt.Fprintf(w, "  installed  unknown: %s\n", s.Problem)
	default:
		fmt.Fprintf(w, "  installed  no: run 'dshmem dsh install'\n")
	}
	if s.Installed {
		if s.Disabled {
			fmt.Fprintf(w, "  enabled    no: disabled: true at line %d\n", s.DisabledAt)
		} else {
			fmt.Fprintf(w, "  enabled    yes\n")
		}
	}
	p := s.Plugin
	switch {
	case !p.Present && s.Installed && !s.Disabled:
		fmt.Fprintf(w, "  plugin     %s is missing: the host refuses to boot until you run 'dshmem dsh install' (or uninstall)\n", p.Path)
	case !p.Present:
		fmt.Fprintf(w, "  plugin     not written (this binary has version %s)\n", p.BinaryVersion)
	case p.Current:
		fmt.Fprintf(w, "  plugin     %s version %s, current\n", p.Path, p.Version)
	default:
		fmt.Fprintf(w, "  plugin     %s version %s, this binary has %s: run 'dshmem dsh install' to upgrade\n", p.Path, orNone(p.Version), p.BinaryVersion)
	}
	if s.Installed {
		fmt.Fprintf(w, "  root       %s\n", orNone(s.Root))
		if s.RootMismatch {
			fmt.Fprintf(w, "             warning: this CLI resolves %s; the plugin uses the root above (run 'dshmem dsh install' to record this one)\n", s.ResolvedRoot)
		}
	} else {
		fmt.Fprintf(w, "  root       %s (as this CLI resolves it)\n", s.ResolvedRoot)
	}
	if b := s.Binary; b != nil {
		switch {
		case !b.Exists:
			fmt.Fprintf(w, "  binary     %s does not exist: run 'dshmem dsh install' from the dshmem you use\n", b.Path)
		case !b.Executable:
			fmt.Fprintf(w, "  binary     %s is not executable\n", b.Path)
		default:
			fmt.Fprintf(w, "  binary     %s\n", b.Path)
		}
	}
	if s.Server.Running {
		fmt.Fprintf(w, "  server     running at %s (pid %d)\n", s.Server.Addr, s.Server.PID)
	} else {
		fmt.Fprintf(w, "  server     %s\n", s.Server.Detail)
	}
	if ss := s.Sessions; ss.Exists {
		fmt.Fprintf(w, "  sessions   %s: %s in %s\n", ss.Path, plural(ss.Sessions, "session"), plural(ss.Projects, "project"))
	} else {
		fmt.Fprintf(w, "  sessions   %s: not there yet (the host creates it in its first session)\n", ss.Path)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
