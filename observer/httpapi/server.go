package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"dshmem/observer"
	"dshmem/observer/broker"
	"dshmem/observer/checkpoint"
	"dshmem/observer/distill"
	"dshmem/observer/importer"
	"dshmem/observer/metrics"
	"dshmem/observer/ui"
	"dshmem/sqlstore/enfreq"
	"dshmem/sqlstore/zhdict"
)

// Limits of the HTTP API.
const (
	// MaxRequestBytes caps the body of every route but POST /v1/events,
	// whose cap is MaxIngestBytes (the same as `dshmem ingest`).
	MaxRequestBytes = 1 << 20
	// DefaultMaxInFlight is how many requests run at once before the
	// server answers 429.
	DefaultMaxInFlight = 256
	// DefaultMaxBodyReads is how many request bodies are read at once.
	DefaultMaxBodyReads = 1024
)

// ServerOptions configure a Server. The zero value works (with a random
// token, no DSH watcher and the rules distiller).
type ServerOptions struct {
	// Token is the bearer token every request must carry; "" picks a
	// random one (NewToken).
	Token string
	// DSHSessions is the host's sessions root to follow; "" follows none.
	DSHSessions string
	Watch       importer.WatchOptions
	Packets     broker.PacketOptions
	// Distiller serves POST /v1/checkpoint and the automatic checkpoints;
	// nil means distill.NewRules().
	Distiller distill.Distiller
	// AutoCheckpoint is how often the pending sessions are checked for a
	// fired trigger (ARCHITECTURE §7); 0 means every minute, < 0 never.
	AutoCheckpoint time.Duration
	// Timeouts of the HTTP server (0: 30s read, 2m write, 2m idle).
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxInFlight caps concurrent requests (0: DefaultMaxInFlight).
	MaxInFlight int
	// A request body is read before the request takes one of those
	// slots, so a client sending slowly holds none: at most MaxBodyReads
	// bodies are read at once (0: DefaultMaxBodyReads), each within
	// BodyTimeout (0: 10s), after which it is answered 408.
	MaxBodyReads int
	BodyTimeout  time.Duration
	// Now is the clock of contexts, packets and idle sessions (nil:
	// time.Now).
	Now func() time.Time
	// Logf receives what the server has to say (nil: nothing).
	Logf func(format string, args ...any)
	// IdleExit, when > 0, closes Idle() once no request (health checks
	// and metrics aside) has come for that long and no session runtime is
	// live, after every pending checkpoint is committed. The host plugin
	// starts its server with it; a server started by hand runs until
	// stopped (0).
	IdleExit time.Duration
	// Maintenance, when > 0, is how often the server checks whether a
	// backup is due (every 7 days: broker.BackupDueAfter) and runs it
	// into BackupDir, and rotates session files older than 30 days
	// (routes_backup.go); the first check comes a minute after start
	// (or after Maintenance, when that is shorter). 0 never checks.
	Maintenance time.Duration
	// BackupDir is where scheduled backups (and POST /v1/backup without
	// a "to") go; "" is backup.DefaultDir of the root.
	BackupDir string

	// index answers the read routes and the broker; nil means the
	// engine's. Tests set it to make the index fail.
	index readIndex
	// idleTick is how often IdleExit is checked (0: a tenth of it, at
	// most a minute). Tests with a fake clock shorten it.
	idleTick time.Duration
	// maintained, when set, is called after each round of the
	// maintenance schedule (tests count them).
	maintained func()
}

// readIndex is what the read routes (recall, search, context) and the
// packet broker ask of the index. Intake does not go through it.
type readIndex interface {
	broker.Recaller
	SessionCwd(ctx context.Context, session string) (string, bool, error)
	Cursors() (map[string]uint64, error)
	Maintenance(ctx context.Context, scope string, now time.Time) ([]string, error)
}

// engineIndex is the engine's readIndex.
type engineIndex struct{ *observer.Engine }

func (e engineIndex) SessionCwd(ctx context.Context, session string) (string, bool, error) {
	return e.Store().SessionCwd(ctx, session)
}

func (e engineIndex) Cursors() (map[string]uint64, error) { return e.Store().Cursors() }

func (e engineIndex) Maintenance(ctx context.Context, scope string, now time.Time) ([]string, error) {
	return broker.Maintenance(ctx, e.Engine, scope, now)
}

// Server is the host's front door: the HTTP JSON API v1 over one open
// Engine, the DSH watcher and the packet broker. It never closes the
// engine: the caller opened it and closes it after Shutdown.
type Server struct {
	eng     *observer.Engine
	index   readIndex
	opts    ServerOptions
	token   []byte
	metrics *metrics.Metrics
	broker  *broker.Broker
	watcher *importer.Watcher
	// redactor redacts what reaches the broker without intake (a
	// claimed prompt).
	redactor observer.Redactor
	http     *http.Server
	slots    chan struct{}
	bodies   chan struct{} // bodies being read (MaxBodyReads)

	ctx    context.Context // background work; cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup
	start  sync.Once

	// The intake (ingest): calls queue here and run joined.
	intakeMu   sync.Mutex
	intakeQ    []*intakeJob
	intakeBusy bool
	intakeWG   sync.WaitGroup
	lastShown  int64 // newest memory/shown id time, under intakeMu
	// The last intake call started: the next one is staged after it and
	// reports after it (intake.go). Closed channels at first.
	intakeStaged, intakeDone <-chan struct{}
	intakeSlots              chan struct{} // intake calls in flight: two
	runs                     ingestRuns    // the order of a client's calls (runs.go)

	logCheck logChecker // the background walk of the log (logcheck.go)

	topMu    sync.Mutex
	firstTop string // the session that got the maintenance reminder
	topTaken bool

	life  *lifecycle
	maint maintenance // backups and rotation (routes_backup.go)
	page  *ui.Page    // the settings page under /ui/

	waiters chan struct{} // packet long polls in flight (MaxPacketWaiters)
	quit    chan struct{} // closed when Shutdown begins: long polls answer
	quitted sync.Once
}

// NewServer prepares a server over e.
func NewServer(e *observer.Engine, opts ServerOptions) (*Server, error) {
	if e == nil {
		return nil, errors.New("observer: NewServer needs an open engine")
	}
	if e.ReadOnly() {
		return nil, fmt.Errorf("start server: %w: the server writes, open the root without ReadOnly", observer.ErrReadOnly)
	}
	if opts.Token == "" {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		opts.Token = t
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Distiller == nil {
		opts.Distiller = distill.NewRules()
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxBodyReads <= 0 {
		opts.MaxBodyReads = DefaultMaxBodyReads
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = 10 * time.Second
	}
	// The body deadline replaces the connection's read deadline: never
	// later than the read timeout would have been.
	opts.BodyTimeout = min(opts.BodyTimeout, orDefault(opts.ReadTimeout, 30*time.Second))
	if opts.AutoCheckpoint == 0 {
		opts.AutoCheckpoint = time.Minute
	}
	s := &Server{eng: e, index: opts.index, opts: opts, token: []byte(opts.Token), metrics: metrics.New(),
		slots: make(chan struct{}, opts.MaxInFlight), bodies: make(chan struct{}, opts.MaxBodyReads), life: newLifecycle(opts.Now()),
		waiters: make(chan struct{}, MaxPacketWaiters), quit: make(chan struct{}),
		intakeStaged: closedChan(), intakeDone: closedChan(), intakeSlots: make(chan struct{}, 2)}
	if s.index == nil {
		s.index = engineIndex{e}
	}
	s.page = ui.New(e, ui.Options{Now: opts.Now, Logf: opts.Logf})
	s.logCheck.log = e.Log()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.broker = broker.New(s.index, opts.Packets, s.metrics, opts.Now, opts.Logf)
	if opts.DSHSessions != "" {
		wo := opts.Watch
		wo.Observe = s.broker.Observe
		wo.Metrics = s.metrics
		if wo.Logf == nil {
			wo.Logf = opts.Logf
		}
		w, err := importer.NewWatcher(e, opts.DSHSessions, wo)
		if err != nil {
			return nil, err
		}
		s.watcher = w
	}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       orDefault(opts.ReadTimeout, 30*time.Second),
		WriteTimeout:      orDefault(opts.WriteTimeout, 2*time.Minute),
		IdleTimeout:       orDefault(opts.IdleTimeout, 2*time.Minute),
	}
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Token is the bearer token requests must carry.
func (s *Server) Token() string { return string(s.token) }

// Metrics are the server's counters.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Broker is the packet broker (tests settle it).
func (s *Server) Broker() *broker.Broker { return s.broker }

// Watcher is the DSH watcher, or nil.
func (s *Server) Watcher() *importer.Watcher { return s.watcher }

// Start starts the background work: the packet broker, the DSH watcher,
// the sweep of idle sessions and the automatic checkpoints. Serve calls
// it; a caller that mounts Handler elsewhere calls it once itself.
func (s *Server) Start() {
	s.start.Do(func() {
		// Read the word tables now, not in the first recall.
		s.goBackground(func(context.Context) { zhdict.Load(); enfreq.Load() })
		s.goBackground(s.broker.Run)
		s.goBackground(s.logCheck.run) // logcheck.go
		if s.watcher != nil {
			s.goBackground(s.watcher.Run)
		}
		s.goEvery(min(s.broker.Idle()/4, time.Minute), func(context.Context) { s.broker.Sweep() })
		if s.opts.AutoCheckpoint > 0 {
			s.goEvery(s.opts.AutoCheckpoint, s.autoCheckpoint)
		}
		s.goBackground(s.runKicked)
		if s.opts.IdleExit > 0 {
			s.goBackground(s.watchIdle)
		}
		if s.opts.Maintenance > 0 {
			s.goBackground(s.runMaintenance)
		}
	})
}

func (s *Server) goBackground(fn func(context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.ctx)
	}()
}

// goEvery runs fn in the background every d until Shutdown.
func (s *Server) goEvery(d time.Duration, fn func(context.Context)) {
	s.goBackground(func(ctx context.Context) {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn(ctx)
			}
		}
	})
}

// autoCheckpoint runs the checkpoints whose triggers fired, measured in
// the log's own clock (checkpoint.Request's zero value).
func (s *Server) autoCheckpoint(ctx context.Context) {
	res, err := checkpoint.Run(ctx, s.eng, checkpoint.Request{Distiller: s.opts.Distiller})
	s.countCheckpoint(res)
	if err != nil && ctx.Err() == nil {
		s.opts.Logf("automatic checkpoint: %v", err)
	}
}

func (s *Server) countCheckpoint(res []checkpoint.Result) {
	for _, r := range res {
		if r.Duplicate {
			continue
		}
		s.metrics.DistillerCalls.Add(1)
		if r.Err != nil {
			s.metrics.DistillerFailure.Add(1)
			s.opts.Logf("distiller failed on %s %s seqs %d..%d: %v", r.Stream, r.Session, r.From, r.To, r.Err)
		}
	}
}

// Serve starts the background work and answers requests on l until
// Shutdown. It returns nil after a Shutdown.
func (s *Server) Serve(l net.Listener) error {
	s.Start()
	err := s.http.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, lets the requests in flight
// finish (until ctx ends), stops the watcher and the broker, and writes
// the memory/shown events still queued. The engine stays open: closing
// it (which flushes and fsyncs the log) is the caller's.
func (s *Server) Shutdown(ctx context.Context) error {
	s.quitted.Do(func() { close(s.quit) })
	err := s.http.Shutdown(ctx)
	s.cancel()
	s.wg.Wait()
	s.intakeWG.Wait()
	if s.watcher != nil {
		// One last scan so what the host wrote before the stop is in.
		if _, werr := s.watcher.Scan(context.Background()); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return err
}

// authorized checks the bearer token in constant time. The scheme is
// matched without regard to case (RFC 9110 §11.1): "bearer" is Bearer.
func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), s.token) == 1
}

// CheckLoopback refuses an address that is not on a loopback interface
// unless allowRemote: the API holds everything the agents saw.
func CheckLoopback(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("listen address %q is not loopback: the API serves everything your agents saw; use 127.0.0.1 or [::1], or pass --allow-remote if you really mean it", addr)
	}
	return nil
}
