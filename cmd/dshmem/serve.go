package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"dshmem/observer"
	"dshmem/observer/backup"
	"dshmem/observer/httpapi"
	"dshmem/sqlstore/vectors"
)

func init() {
	register(&command{
		name:    "serve",
		summary: "run the HTTP API for agent hosts, and follow DSH session logs",
		usage: `serve [--addr 127.0.0.1:0] [--dsh-sessions DIR | --no-watch] [--allow-remote] [--distiller rules|openai] [--idle-exit D] [--backup-to DIR] [--maintenance-every D] [--vectors=false] [--encoders N]

Holds the root (the writer lock) and answers the HTTP JSON API v1 on
--addr (default 127.0.0.1 with a free port). Every request needs the
bearer token that the server writes, with its address and pid, to
<root>/serve.json ({"addr","pid","token"}, mode 0600, removed on exit).
See the README, "HTTP API v1", for the routes.

The address must be loopback (127.0.0.0/8, ::1 or localhost): the API
serves everything your agents saw. --allow-remote lifts that check; put
the server behind something that encrypts the connection if you use it.

It follows the DSH host's session logs under --dsh-sessions (default
$DSH_HOME/sessions, else ~/.dsh/sessions): new sessions, appended frames,
a half-written last frame (waited for), the newest format generation.
Events are mapped exactly as 'import dsh' maps them; where each log was
left is kept in <root>/dsh-watch.json, so a restart resumes without
duplicates or gaps. Host files are only read: never written, renamed or
locked. --no-watch turns the watcher off.

--idle-exit D (e.g. 30m) stops the server by itself once no request has
come for D and no host session is live, after committing every pending
checkpoint. The DSH host plugin starts its server with --idle-exit 30m;
without the flag (or with 0) the server runs until it is stopped.

A minute after start and every --maintenance-every (default 1h) it
backs the root up when a backup is due (the last one is 7 days old, or
there is none and memory goes back 7 days) into --backup-to (see
'dshmem backup'), and moves session files older than 30 days into
sessions/archive/ (see 'dshmem rotate').

With the sentence encoder installed ('dshmem model install'), it gives
every English entry and message a vector in the background, after the
text is acknowledged, and recall, search and packets fuse the nearest
vectors with the words; a query or text that is not English is ranked
by words alone. --encoders N (default 1) is how many texts it encodes at
once: each takes a core while there is text without a vector (about 240
English texts of 30 pieces a second per core here), so the default
leaves the other cores to the requests; a large import fills faster
with more. --vectors=false turns the vectors off; without the model
nothing changes.

While it runs, 'dshmem ingest', 'remember', 'forget', 'checkpoint',
'backup' and 'rotate' on the same root are sent to it. SIGINT or SIGTERM: stop accepting, let
the requests in flight finish, flush and fsync the log, remove
serve.json, exit 0.
`,
		run: runServe,
	})
}

// defaultDSHSessions is $DSH_HOME/sessions, else ~/.dsh/sessions.
func defaultDSHSessions() string {
	if h := os.Getenv("DSH_HOME"); h != "" {
		return filepath.Join(h, "sessions")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".dsh", "sessions")
	}
	return ""
}

func runServe(ctx context.Context, env *cliEnv, args []string) error {
	c := commands["serve"]
	fs := newFlags(c)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback unless --allow-remote)")
	allowRemote := fs.Bool("allow-remote", false, "allow a listen address that is not loopback")
	sessions := fs.String("dsh-sessions", defaultDSHSessions(), "the DSH host's sessions root to follow")
	noWatch := fs.Bool("no-watch", false, "do not follow DSH session logs")
	name := fs.String("distiller", envOr(envDistiller, "rules"), "distiller of checkpoints: rules or openai")
	idleExit := fs.Duration("idle-exit", 0, "stop after this long with no request and no live session (0: never)")
	backupTo := fs.String("backup-to", "", "where scheduled backups go (default $"+backup.EnvDir+", else memory-backup/ beside the root)")
	encode := fs.Bool("vectors", true, "give English entries and messages a vector and fuse them into recall, when the sentence encoder is installed ('dshmem model install'); false: words alone")
	encoders := fs.Int("encoders", 1, "texts encoded at once in the background, a core each while text waits for a vector (1.."+strconv.Itoa(maxEncoders)+")")
	maintEvery := fs.Duration("maintenance-every", time.Hour, "how often to check whether a backup is due and old session files are to rotate (0: never)")
	if err := env.parseNoArgs(c, fs, args); err != nil {
		return err
	}
	// A CPU profile of the whole run, for whoever tunes the server under
	// a benchmark that starts it as a child (bench remember): an
	// environment variable, so the benchmark's command line stays the
	// same for an older build.
	stopProfile, err := startCPUProfile(os.Getenv("DSHMEM_SERVE_CPUPROFILE"))
	if err != nil {
		return err
	}
	defer stopProfile()
	if *maintEvery < 0 {
		return usageError{fmt.Sprintf("--maintenance-every %s is negative: give a duration such as 1h, or 0 to never back up on a schedule", *maintEvery)}
	}
	if *encoders < 1 || *encoders > maxEncoders {
		return usageError{fmt.Sprintf("--encoders %d is out of range (1..%d): each encoder takes a core while text waits for a vector", *encoders, maxEncoders)}
	}
	if !*encode && flagSet(fs, "encoders") {
		return usageError{"--encoders sets how many texts are given vectors at once, and --vectors=false gives none: drop one of the two"}
	}
	if *idleExit < 0 {
		return usageError{fmt.Sprintf("--idle-exit %s is negative: give a duration such as 30m, or 0 to run until stopped", *idleExit)}
	}
	if err := httpapi.CheckLoopback(*addr, *allowRemote); err != nil {
		return usageError{err.Error()}
	}
	d, err := newDistiller(*name, os.Getenv(envLLMBaseURL), os.Getenv(envLLMModel))
	if err != nil {
		return err
	}
	watch := *sessions
	if *noWatch {
		watch = ""
	}
	// The secret rules compile beside the open (migrations, catch-up)
	// instead of in the first writes (about 25 ms of CPU in all).
	go observer.WarmRedaction()
	eng, err := openEngine(ctx, env)
	if err != nil {
		var le *observer.LockedError
		if errors.As(err, &le) {
			if info, rerr := httpapi.ReadServeFile(env.root); rerr == nil && info.PID == le.PID {
				return fmt.Errorf("a server already runs on %s (pid %d, %s)", env.root, info.PID, info.Addr)
			}
		}
		return err
	}
	defer eng.Close()
	if *encode {
		if m := loadEncoder(env); m != nil {
			eng.StartVectors(vectors.NewDense(m), *encoders)
		}
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	logger := log.New(env.stderr, "dshmem serve: ", log.LstdFlags)
	srv, err := httpapi.NewServer(eng, httpapi.ServerOptions{DSHSessions: watch, Distiller: d, Logf: logger.Printf, IdleExit: *idleExit,
		Maintenance: *maintEvery, BackupDir: *backupTo})
	if err != nil {
		l.Close()
		return err
	}
	pid := os.Getpid()
	info := httpapi.ServeInfo{Addr: l.Addr().String(), PID: pid, Token: srv.Token()}
	if err := httpapi.WriteServeFile(env.root, info); err != nil {
		l.Close()
		return err
	}
	defer httpapi.RemoveServeFile(env.root, pid)
	if watch != "" {
		logger.Printf("listening on http://%s (token in %s); following %s", info.Addr, filepath.Join(env.root, httpapi.ServeFile), watch)
	} else {
		logger.Printf("listening on http://%s (token in %s)", info.Addr, filepath.Join(env.root, httpapi.ServeFile))
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	var serveErr error
	select {
	case <-ctx.Done():
		logger.Printf("stopping: finishing requests in flight")
	case <-srv.Idle():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if serveErr == nil {
		serveErr = <-errc
	}
	if err := httpapi.RemoveServeFile(env.root, pid); err != nil {
		logger.Printf("%v", err)
	}
	if err := eng.Close(); err != nil {
		return fmt.Errorf("close root: %w", err)
	}
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	if shutErr != nil {
		return fmt.Errorf("shut down: %w", shutErr)
	}
	logger.Printf("stopped")
	return nil
}

// maxEncoders bounds serve's --encoders: each holds its buffers (about
// 2.6 MB) and a core while it works.
const maxEncoders = 64
