package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"dshmem/observer"
	"dshmem/observer/httpapi"
)

// The write commands below run when the root is held by `dshmem serve`:
// they send their change to it (httpapi.Client) and print its answer.

// onServer sends req (JSON) to path on the server holding the root and
// decodes its answer into resp; it first says on stderr who runs it,
// with say (a format taking the server's pid and address). With no
// server holding the root, it returns the open error that sent it here,
// explained (httpapi.NotServing). client, when set, replaces the
// server's client (a long run outlasts its default timeout).
func onServer(ctx context.Context, env *cliEnv, openErr error, say, path string, req, resp any, client *http.Client) error {
	cl, ok := httpapi.Serving(env.root, openErr)
	if !ok {
		return httpapi.NotServing(openErr)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode the request for %s: %w", path, err)
	}
	fmt.Fprintf(env.stderr, "dshmem: "+say+"\n", cl.Info.PID, cl.Info.Addr)
	if client != nil {
		cl.HTTP = client
	}
	return cl.Post(ctx, path, body, resp)
}

// What onServer says.
const (
	sayRunBy  = "run by the server holding the root (pid %d, %s)"
	saySentTo = "sent to the server holding the root (pid %d, %s)"
)

// printJSON prints v as indented JSON, HTML characters as they are.
func printJSON(env *cliEnv, v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// forwardIngest sends the input of `dshmem ingest` to the server as
// JSONL, in calls under the server's cap, two in flight: each call names
// its run and its number in it (httpapi.HeaderIngestRun), and the server
// queues a run's calls in their order, so the log holds the input in
// its order while the server validates one call and folds the other.
// Answers are reported in input order; after a call fails no more are
// sent. Line numbers in the errors are those of the whole input.
func forwardIngest(ctx context.Context, env *cliEnv, openErr error, in io.Reader, name string, size int64) error {
	cl, ok := httpapi.Serving(env.root, openErr)
	if !ok {
		return httpapi.NotServing(openErr)
	}
	fmt.Fprintf(env.stderr, "dshmem: sending to the server holding the root (pid %d, %s)\n", cl.Info.PID, cl.Info.Addr)
	m := newMeter(env, "ingest:", size)
	// A failed call cancels the call in flight behind it: the server
	// would hold it waiting for the failed one's turn.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		total   observer.IngestResult
		warning string
		run     = rand.Text()
	)
	q := observer.NewInOrder(2, func(f forwarded, err error) { // the answers, in input order
		if err != nil {
			return
		}
		for _, r := range f.resp.Results {
			if r.Status == observer.StatusRejected {
				line := r.Line
				if line >= 1 && line <= len(f.call.Nums) {
					line = f.call.Nums[line-1]
				}
				reportRejected(env, m, name, &observer.LineError{Line: line, Field: r.Field, Msg: r.Error})
			}
		}
		total.Appended += f.resp.Appended
		total.Duplicates += f.resp.Duplicates
		total.Rejected += f.resp.Rejected
		if f.resp.Warning != "" {
			warning = f.resp.Warning
		}
		m.set(int64(total.Appended+total.Duplicates+total.Rejected), f.call.Read)
	}, cancel)
	n := 0
	err := observer.SplitCalls(in, 0, 0, func(c observer.Call) error {
		n++
		header := http.Header{httpapi.HeaderIngestRun: {run}, httpapi.HeaderIngestCall: {strconv.Itoa(n)}}
		return q.Go(ctx, func() (forwarded, error) {
			f := forwarded{call: c}
			err := cl.PostHeader(ctx, "/v1/events", c.Body(), header, &f.resp)
			return f, err
		})
	})
	failed := q.Wait()
	m.done()
	if errors.Is(err, observer.ErrInOrderStopped) || errors.Is(err, context.Canceled) && failed != nil {
		err = nil // the failure stopped the input
	}
	err = errors.Join(failed, err)
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

// forwarded is one call of forwardIngest and the server's answer.
type forwarded struct {
	call observer.Call
	resp httpapi.EventsResponse
}

// forwardRemember sends `dshmem remember` to the server.
func forwardRemember(ctx context.Context, env *cliEnv, openErr error, req observer.RememberRequest, asJSON bool) error {
	cl, ok := httpapi.Serving(env.root, openErr)
	if !ok {
		return httpapi.NotServing(openErr)
	}
	body, _ := json.Marshal(httpapi.RememberAPIRequest{Content: req.Content, Cwd: req.Cwd, Global: req.Cwd == "",
		Title: req.Title, Type: req.Type, Tags: req.Tags, Importance: req.Importance})
	var en observer.Entry
	if err := cl.Post(ctx, "/v1/remember", body, &en); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: sent to the server holding the root (pid %d, %s)\n", cl.Info.PID, cl.Info.Addr)
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
	cl, ok := httpapi.Serving(env.root, openErr)
	if !ok {
		return httpapi.NotServing(openErr)
	}
	body, _ := json.Marshal(httpapi.ForgetAPIRequest{ID: id, Reason: reason})
	var en observer.Entry
	if err := cl.Post(ctx, "/v1/forget", body, &en); err != nil {
		var fe *httpapi.RefusedError
		if errors.As(err, &fe) {
			switch fe.Status {
			case http.StatusNotFound:
				return errNoEntry(env, id)
			case http.StatusConflict:
				return errEntryForgotten(id)
			}
		}
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: sent to the server holding the root (pid %d, %s)\n", cl.Info.PID, cl.Info.Addr)
	fmt.Fprintf(env.stdout, "%s\nforgot %q (%s)\n", en.ID, en.Title, en.Scope)
	return nil
}

// forwardCheckpoint sends `dshmem checkpoint` to the server, which runs it
// with its own distiller.
func forwardCheckpoint(ctx context.Context, env *cliEnv, openErr error, cwd, session string, force, asJSON bool) error {
	cl, ok := httpapi.Serving(env.root, openErr)
	if !ok {
		return httpapi.NotServing(openErr)
	}
	body, _ := json.Marshal(httpapi.CheckpointAPIRequest{Cwd: cwd, Session: session, Force: force})
	var resp httpapi.CheckpointResponse
	if err := cl.Post(ctx, "/v1/checkpoint", body, &resp); err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "dshmem: run by the server holding the root (pid %d, %s) with its distiller\n", cl.Info.PID, cl.Info.Addr)
	if asJSON {
		printCheckpointJSON(env, resp.Results)
	} else {
		printCheckpoint(env, resp.Results)
	}
	return nil
}
