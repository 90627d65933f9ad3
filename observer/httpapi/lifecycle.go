package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"dshmem/events"
	"dshmem/observer/checkpoint"
)

// lifecycle is what a server started by the host plugin needs beyond the
// API: a checkpoint run soon after a session ends (so the next session's
// context holds what the last one taught), and an exit of its own once
// nobody has used it for a while.
type lifecycle struct {
	lastRequest atomic.Int64 // unix nanos of the newest request

	mu      sync.Mutex
	cond    *sync.Cond
	kicked  bool // a checkpoint run is due
	running bool // a checkpoint run is under way
	wake    chan struct{}

	idle chan struct{} // closed when the server has been idle for IdleExit
}

func newLifecycle(now time.Time) *lifecycle {
	l := &lifecycle{wake: make(chan struct{}, 1), idle: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	l.lastRequest.Store(now.UnixNano())
	return l
}

// touch records a request.
func (l *lifecycle) touch(now time.Time) { l.lastRequest.Store(now.UnixNano()) }

// kick asks for a checkpoint run soon.
func (l *lifecycle) kick() {
	l.mu.Lock()
	l.kicked = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// settle waits until no checkpoint run is due or under way, or until d
// has passed. It reports whether the runs settled.
func (l *lifecycle) settle(d time.Duration) bool {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer t.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.kicked || l.running {
		if !time.Now().Before(deadline) {
			return false
		}
		l.cond.Wait()
	}
	return true
}

// endsSession reports whether evs hold a session/end: the trigger that
// should not wait for the next scheduled checkpoint.
func endsSession(evs []events.Envelope) bool {
	for i := range evs {
		if evs[i].Type == events.TypeSessionEnd {
			return true
		}
	}
	return false
}

// runKicked runs a checkpoint each time one is kicked, until ctx ends.
// The watcher scans first, so what the host flushed before it reported
// the session's end is in the log when the checkpoint claims its range.
func (s *Server) runKicked(ctx context.Context) {
	l := s.life
	for {
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.kicked = false
			l.cond.Broadcast()
			l.mu.Unlock()
			return
		case <-l.wake:
		}
		l.mu.Lock()
		if !l.kicked {
			l.mu.Unlock()
			continue
		}
		l.kicked, l.running = false, true
		l.mu.Unlock()
		if s.watcher != nil {
			if _, err := s.watcher.Scan(ctx); err != nil && ctx.Err() == nil {
				s.opts.Logf("scan before checkpoint: %v", err)
			}
		}
		s.autoCheckpoint(ctx)
		l.mu.Lock()
		l.running = false
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// watchIdle closes l.idle once no request has come for IdleExit and no
// session runtime is live, after committing every pending checkpoint
// (forced: nothing the sessions said waits for a trigger that may never
// come once the server is gone).
func (s *Server) watchIdle(ctx context.Context) {
	d := s.opts.IdleExit
	tick := s.opts.idleTick
	if tick <= 0 {
		tick = min(max(d/10, 10*time.Millisecond), time.Minute)
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		last := time.Unix(0, s.life.lastRequest.Load())
		if s.opts.Now().Sub(last) < d || s.broker.Sessions() > 0 {
			continue
		}
		res, err := checkpoint.Run(ctx, s.eng, checkpoint.Request{Distiller: s.opts.Distiller, Force: true})
		s.countCheckpoint(res)
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logf("checkpoint before idle exit: %v (staying up)", err)
			}
			continue
		}
		// A request that came during the checkpoint keeps the server up.
		if s.opts.Now().Sub(time.Unix(0, s.life.lastRequest.Load())) < d {
			continue
		}
		s.opts.Logf("idle for %s with no live session: stopping", d)
		close(s.life.idle)
		return
	}
}

// Idle is closed when a server with IdleExit set has been idle that
// long; `dshmem serve` then shuts down as on SIGTERM.
func (s *Server) Idle() <-chan struct{} { return s.life.idle }
