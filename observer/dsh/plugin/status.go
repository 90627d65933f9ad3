package plugin

import (
	"bytes"
	"context"
	"dshmem/observer/httpapi"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Status is what `dshmem dsh status` reports. Its JSON is for scripts:
// fields are added, never renamed.
type Status struct {
	DSHHome   string `json:"dshHome"`
	PatchFile string `json:"patchFile"`
	// Problem is why the patch file could not be read (it does not parse,
	// or names our id where dshmem does not write it); "" when it could.
	Problem   string `json:"problem,omitempty"`
	Installed bool   `json:"installed"` // our row is in the patch file
	RowLine   int    `json:"rowLine,omitempty"`
	// Disabled: the host will not load the plugin; DisabledAt is the line
	// that says so.
	Disabled   bool   `json:"disabled"`
	DisabledAt int    `json:"disabledAt,omitempty"`
	Patches    []int  `json:"patches,omitempty"`
	Entry      *Entry `json:"entry,omitempty"` // as the row records it

	Plugin PluginState `json:"plugin"`
	// Root is the root the row records, ResolvedRoot the one this CLI
	// resolves; RootMismatch when both are known and differ.
	Root         string       `json:"root,omitempty"`
	ResolvedRoot string       `json:"resolvedRoot"`
	RootMismatch bool         `json:"rootMismatch"`
	Binary       *BinaryState `json:"binary,omitempty"`
	Server       ServerState  `json:"server"`
	Sessions     SessionsDir  `json:"sessions"`
}

// PluginState compares the installed plugin file with the embedded one.
type PluginState struct {
	Path          string `json:"path"`
	Present       bool   `json:"present"`
	Version       string `json:"version,omitempty"` // of the installed file
	BinaryVersion string `json:"binaryVersion"`     // of the plugin this binary embeds
	Current       bool   `json:"current"`           // the installed bytes are the embedded ones
}

// BinaryState checks the binary the row records.
type BinaryState struct {
	Path       string `json:"path"`
	Exists     bool   `json:"exists"`
	Executable bool   `json:"executable"`
}

// ServerState says whether a dshmem server answers for the root.
type ServerState struct {
	Running bool   `json:"running"`
	Addr    string `json:"addr,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Detail  string `json:"detail,omitempty"` // why it is not running, or what answered
}

// SessionsDir is the host's sessions folder, which dshmem serve watches.
type SessionsDir struct {
	Path     string `json:"path"`
	Exists   bool   `json:"exists"`
	Projects int    `json:"projects"`
	Sessions int    `json:"sessions"`
}

// healthTimeout bounds the server probe: status must answer quickly.
const healthTimeout = time.Second

// ReadStatus reports on the installation in o.DSHHome without changing
// anything. o.Root is the root the caller resolves, compared with the
// one the row records; the server is looked for under the row's root.
func ReadStatus(ctx context.Context, o Options) (*Status, error) {
	o, err := o.resolve(false)
	if err != nil {
		return nil, err
	}
	st := &Status{DSHHome: o.DSHHome, PatchFile: PatchPath(o.DSHHome), ResolvedRoot: o.Root}
	st.Plugin = PluginState{Path: PluginPath(o.DSHHome), BinaryVersion: Version()}
	src, _, err := readPatch(st.PatchFile)
	if err != nil {
		st.Problem = err.Error()
	} else if src != nil {
		e, ed, err := Inspect(src)
		if err != nil {
			st.Problem = withPath(err, st.PatchFile).Error()
		}
		st.Patches = ed.Patches
		if e != nil {
			st.Installed, st.RowLine, st.Entry = true, ed.Line, e
			st.Disabled, st.DisabledAt = ed.DisabledAt > 0, ed.DisabledAt
			st.Root = e.Config.Root
			st.RootMismatch = st.Root != "" && filepath.Clean(st.Root) != filepath.Clean(o.Root)
			if e.Name != "" {
				st.Plugin.Path = e.Name
			}
			if e.Config.Binary != "" {
				b := &BinaryState{Path: e.Config.Binary}
				if fi, err := os.Stat(b.Path); err == nil {
					b.Exists = true
					b.Executable = fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
				}
				st.Binary = b
			}
		}
	}
	if have, err := os.ReadFile(st.Plugin.Path); err == nil {
		st.Plugin.Present, st.Plugin.Version = true, VersionOf(have)
		st.Plugin.Current = bytes.Equal(have, source)
	}
	root := o.Root
	if st.Root != "" {
		root = st.Root
	}
	st.Server = probeServer(ctx, root)
	st.Sessions = countSessions(filepath.Join(o.DSHHome, "sessions"))
	return st, nil
}

// probeServer reads root/serve.json and asks the server it names for
// /v1/healthz, with the token and a short timeout.
func probeServer(ctx context.Context, root string) ServerState {
	info, err := httpapi.ReadServeFile(root)
	if errors.Is(err, fs.ErrNotExist) {
		return ServerState{Detail: "not running (the plugin starts one when a session begins)"}
	}
	if err != nil {
		return ServerState{Detail: fmt.Sprintf("not running: %v", err)}
	}
	st := ServerState{Addr: info.Addr, PID: info.PID}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+info.Addr+"/v1/healthz", nil)
	if err != nil {
		st.Detail = fmt.Sprintf("not running: serve.json names %q: %v", info.Addr, err)
		return st
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.Detail = fmt.Sprintf("not running: serve.json names %s (pid %d) but nothing answers there; a stale file from a server that did not exit cleanly", info.Addr, info.PID)
		return st
	}
	defer resp.Body.Close()
	var h httpapi.Health
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&h) != nil || !h.OK {
		st.Detail = fmt.Sprintf("not running: %s answered %s to /v1/healthz, not a dshmem server with this token", info.Addr, resp.Status)
		return st
	}
	st.Running = true
	if h.PID != 0 {
		st.PID = h.PID
	}
	return st
}

// countSessions counts the host's project folders and the session
// folders inside them: <sessions>/<project>/<session>/.
func countSessions(dir string) SessionsDir {
	s := SessionsDir{Path: dir}
	projects, err := os.ReadDir(dir)
	if err != nil {
		return s
	}
	s.Exists = true
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		s.Projects++
		ents, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() {
				s.Sessions++
			}
		}
	}
	return s
}
