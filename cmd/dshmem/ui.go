package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"runtime"
	"syscall"

	"dshmem/observer/httpapi"
)

func init() {
	register(&command{
		name:    "ui",
		summary: "print (or open) a one-time login link to the Memory settings page",
		usage: `ui [--open] [--json]

Asks the running 'dshmem serve' of the root for a one-time login link to
the settings page at /ui/ and prints it. The page shows every scope with
its summary, entries and their history; it can remember, edit and forget
entries, and archive, restore or purge a scope (purge asks you to type
the scope's key). Every change it makes is an event in the log, like the
CLI's.

The link works once and for 5 minutes; following it logs the browser in
with a session cookie (HttpOnly, SameSite=Strict) for 12 hours, until the
server stops. Anyone who can read the link before you open it can log in
with it, so do not paste it anywhere.

--open also opens the link in the default browser (xdg-open on Linux,
open on macOS). --json prints {"url","expires"}.

The page is served by 'dshmem serve'; without a running server this
command fails and says how to start one.

Examples:
  dshmem ui
  dshmem ui --open
  dshmem --root ~/.dsh/memory ui --json
`,
		run: runUI,
	})
}

func runUI(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["ui"]
	fs := newFlags(c)
	open := fs.Bool("open", false, "open the link in the default browser")
	asJSON := fs.Bool("json", false, "print the link as JSON")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	cl, err := runningServer(env.root)
	if err != nil {
		return err
	}
	var link httpapi.UILinkResponse
	if err := cl.Post(ctx, "/v1/ui/link", []byte("{}"), &link); err != nil {
		return fmt.Errorf("ask the server for a login link: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(link); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(env.stdout, link.URL)
		fmt.Fprintf(env.stderr, "dshmem: a one-time login link to the Memory page (works once, until %s); open it in a browser on this machine\n", link.Expires)
	}
	if *open {
		if err := openBrowser(link.URL); err != nil {
			fmt.Fprintf(env.stderr, "dshmem: could not open a browser (%v); open the link above by hand\n", err)
		}
	}
	return nil
}

// runningServer is a client for the server serve.json names, if that
// process is alive.
func runningServer(root string) (*httpapi.Client, error) {
	start := "start one with 'dshmem --root " + root + " serve' (it holds the root and serves the page at /ui/), then run 'dshmem ui' again"
	info, err := httpapi.ReadServeFile(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no 'dshmem serve' runs on %s (it has no %s): %s", root, httpapi.ServeFile, start)
	}
	if err != nil {
		return nil, fmt.Errorf("find the server of %s: %w; %s", root, err, start)
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, fmt.Errorf("no 'dshmem serve' runs on %s (%s names pid %d, which has exited): %s", root, httpapi.ServeFile, info.PID, start)
	}
	return &httpapi.Client{Info: info}, nil
}

// openBrowser hands url to the desktop's opener.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("%s not found", name)
	}
	cmd := exec.Command(path, url)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
