package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"dshmem/observer"
	"dshmem/observer/httpapi"
)

// A write command that finds the root held by `dshmem serve` sends its
// change to that server instead (ARCHITECTURE §3: one writer per root).
// The server is trusted only when serve.json names the process that holds
// the writer lock and that process is alive; otherwise the command fails
// with the lock holder's error and a hint.

// servingServer returns the server that holds the root, when openErr is
// the writer lock's *LockedError and serve.json names the holder.
func servingServer(root string, openErr error) (httpapi.ServeInfo, bool) {
	var le *observer.LockedError
	if !errors.As(openErr, &le) || le.PID <= 0 {
		return httpapi.ServeInfo{}, false
	}
	info, err := httpapi.ReadServeFile(root)
	if err != nil || info.PID != le.PID {
		return httpapi.ServeInfo{}, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return httpapi.ServeInfo{}, false
	}
	return info, true
}

// notForwarded is the error of a write that found the root locked by a
// process that is not a server it can talk to.
func notForwarded(root string, openErr error) error {
	var le *observer.LockedError
	if !errors.As(openErr, &le) {
		return openErr
	}
	return fmt.Errorf("%w; no running 'dshmem serve' was found for it (%s names no live server holding the lock), so the change was not sent anywhere", openErr, httpapi.ServeFile)
}

// forwardClient has a timeout long enough for a checkpoint with a remote
// distiller.
var forwardClient = &http.Client{Timeout: 5 * time.Minute}

// forward sends body to the server's path and decodes a 200 answer into
// out. An API error comes back as an error quoting the server's message.
func forward(ctx context.Context, info httpapi.ServeInfo, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+info.Addr+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("send to server %s: %w", info.Addr, err)
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := forwardClient.Do(req)
	if err != nil {
		return fmt.Errorf("send to the server holding the root (pid %d, %s): %w", info.PID, info.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read the server's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e httpapi.APIError
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return &forwardError{status: resp.StatusCode, code: e.Error.Code, msg: e.Error.Message}
		}
		return fmt.Errorf("server %s answered %s: %s", info.Addr, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode the server's answer: %w", err)
	}
	return nil
}

type forwardError struct {
	status    int
	code, msg string
}

func (e *forwardError) Error() string {
	return fmt.Sprintf("the server holding the root refused it (%d %s): %s", e.status, e.code, e.msg)
}

// forwardIngest sends the input of `dshmem ingest` to the server as
// JSONL, in calls under the server's cap, one after the other (so the
// server sees them in input order). Line numbers in the errors are those
// of the whole input.
func forwardIngest(ctx context.Context, env *cliEnv, openErr error, in io.Reader, name string, size int64) error {
	info, ok := servingServer(env.root, openErr)
	if !ok {
		return notForwarded(env.root, openErr)
	}
	fmt.Fprintf(env.stderr, "dshmem: sending to the server holding the root (pid %d, %s)\n", info.PID, info.Addr)
	m := newMeter(env, "ingest:", size)
	var total observer.IngestResult
	var warning string
	err := observer.SplitCalls(in, 0, 0, func(c observer.Call) error {
		var resp httpapi.EventsResponse
		if err := forward(ctx, info, "/v1/events", c.Body(), &resp); err != nil {
			return err
		}
		for _, r := range resp.Results {
			if r.Status == observer.StatusRejected {
				line := r.Line
				if line >= 1 && line <= len(c.Nums) {
					line = c.Nums[line-1]
				}
				reportRejected(env, m, name, &observer.LineError{Line: line, Field: r.Field, Msg: r.Error})
			}
		}
		total.Appended += resp.Appended
		total.Duplicates += resp.Duplicates
		total.Rejected += resp.Rejected
		if resp.Warning != "" {
			warning = resp.Warning
		}
		m.set(int64(total.Appended+total.Duplicates+total.Rejected), c.Read)
		return nil
	})
	m.done()
	if total != (observer.IngestResult{}) || err == nil {
		b, _ := json.Marshal(total)
		fmt.Fprintln(env.stdout, string(b))
	}
	if err != nil {
		return fmt.Errorf("ingest %s: %w", name, err)
	}
	if warning != "" {
		fmt.Fprintf(env.stderr, "dshmem: %s\n", warning)
	}
	if total.Rejected > 0 {
		return exitError{1}
	}
	return nil
}

// forwardRemember sends `dshmem remember` to the server.
func forwardRemember(ctx context.Context, env *cliEnv, openErr error, req observer.RememberRequest, asJSON bool) error {
	info, ok := servingServer(env.root, openErr)
	if !ok {
		return notForwarded(env.root, openErr)
	}
	body, _ := json.Marshal(httpapi.RememberAPIRequest{Content: req.Content, Cwd: req.Cwd, Global: req.Cwd == "",
		Title: req.Title, Type: req.Type, Tags: req.Tags, Importance: req.Importance})
	var en observer.Entry
	if err := forward(ctx, info, "/v1/remember", body, &en); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: sent to the server holding the root (pid %d, %s)\n", info.PID, info.Addr)
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(en)
	}
	fmt.Fprintln(env.stdout, en.ID)
	return nil
}

// forwardForget sends `dshmem forget` to the server.
func forwardForget(ctx context.Context, env *cliEnv, openErr error, id, reason string) error {
	info, ok := servingServer(env.root, openErr)
	if !ok {
		return notForwarded(env.root, openErr)
	}
	body, _ := json.Marshal(httpapi.ForgetAPIRequest{ID: id, Reason: reason})
	var en observer.Entry
	if err := forward(ctx, info, "/v1/forget", body, &en); err != nil {
		var fe *forwardError
		if errors.As(err, &fe) {
			switch fe.status {
			case http.StatusNotFound:
				return errNoEntry(env, id)
			case http.StatusConflict:
				return errEntryForgotten(id)
			}
		}
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: sent to the server holding the root (pid %d, %s)\n", info.PID, info.Addr)
	fmt.Fprintf(env.stdout, "%s\nforgot %q (%s)\n", en.ID, en.Title, en.Scope)
	return nil
}

// forwardCheckpoint sends `dshmem checkpoint` to the server, which runs it
// with its own distiller.
func forwardCheckpoint(ctx context.Context, env *cliEnv, openErr error, cwd, session string, force, asJSON bool) error {
	info, ok := servingServer(env.root, openErr)
	if !ok {
		return notForwarded(env.root, openErr)
	}
	body, _ := json.Marshal(httpapi.CheckpointAPIRequest{Cwd: cwd, Session: session, Force: force})
	var resp httpapi.CheckpointResponse
	if err := forward(ctx, info, "/v1/checkpoint", body, &resp); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: run by the server holding the root (pid %d, %s) with its distiller\n", info.PID, info.Addr)
	if asJSON {
		printCheckpointJSON(env, resp.Results)
	} else {
		printCheckpoint(env, resp.Results)
	}
	return nil
}
