package httpapi

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
)

// A write command that finds the root held by `dshmem serve` sends its
// change to that server instead (ARCHITECTURE §3: one writer per root).
// The server is trusted only when serve.json names the process that holds
// the writer lock and that process is alive; otherwise the command fails
// with the lock holder's error and a hint.

// Client sends requests to the server that holds a root.
type Client struct {
	Info ServeInfo
	HTTP *http.Client // nil: a client whose timeout fits a checkpoint with a remote distiller
}

// forwardTimeout is long enough for a checkpoint with a remote distiller.
const forwardTimeout = 5 * time.Minute

// Serving returns a client for the server that holds root, when openErr
// is the writer lock's *observer.LockedError and serve.json names the
// holder, alive.
func Serving(root string, openErr error) (*Client, bool) {
	var le *observer.LockedError
	if !errors.As(openErr, &le) || le.PID <= 0 {
		return nil, false
	}
	info, err := ReadServeFile(root)
	if err != nil || info.PID != le.PID {
		return nil, false
	}
	if err := syscall.Kill(info.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return nil, false
	}
	return &Client{Info: info}, true
}

// NotServing is the error of a write that found the root locked by a
// process that is not a server it can talk to.
func NotServing(openErr error) error {
	var le *observer.LockedError
	if !errors.As(openErr, &le) {
		return openErr
	}
	return fmt.Errorf("%w; no running 'dshmem serve' was found for it (%s names no live server holding the lock), so the change was not sent anywhere", openErr, ServeFile)
}

// RefusedError is a server's error answer to a Client's request.
type RefusedError struct {
	Status        int
	Code, Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the server holding the root refused it (%d %s): %s", e.Status, e.Code, e.Message)
}

// Post sends body (JSON or JSONL) to path and decodes a 200 answer into
// out. An API error comes back as a *RefusedError quoting the server.
func (c *Client) Post(ctx context.Context, path string, body []byte, out any) error {
	return c.PostHeader(ctx, path, body, nil, out)
}

// PostHeader is Post with header's fields added to the request.
func (c *Client) PostHeader(ctx context.Context, path string, body []byte, header http.Header, out any) error {
	info := c.Info
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+info.Addr+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("send to server %s: %w", info.Addr, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+info.Token)
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: forwardTimeout}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("send to the server holding the root (pid %d, %s): %w", info.PID, info.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read the server's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e APIError
		if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
			return &RefusedError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message}
		}
		return fmt.Errorf("server %s answered %s: %s", info.Addr, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode the server's answer: %w", err)
	}
	return nil
}
