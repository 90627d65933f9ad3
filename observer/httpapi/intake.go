package httpapi

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/observer"
)

// intakeJob is one call waiting for the server's intake: the lines of
// one POST /v1/events (done is closed when its outcomes are in), or
// memory/shown lines that nobody waits for (done is nil).
type intakeJob struct {
	lines    [][]byte
	size     int
	res      observer.IngestResult
	outs     []observer.Outcome
	err      error
	observed []events.Envelope // the appended events, stream and seq set
	done     chan struct{}
}

// ingest sends lines through the server's intake and waits for their
// outcomes. Calls that arrive while an intake runs are joined into one
// Engine.Ingest call (group commit): one lock, one append and fsync per
// stream, one fold and one render of the projections for all of them.
// Every event keeps its own outcome; the appended ones are given to the
// broker, in arrival order, before the call returns.
// queued, when set, is called once the job is in the queue.
func (s *Server) ingest(lines [][]byte, queued func()) *intakeJob {
	j := &intakeJob{lines: lines, done: make(chan struct{})}
	for _, l := range lines {
		j.size += len(l)
	}
	s.enqueue(j)
	if queued != nil {
		queued()
	}
	<-j.done
	return j
}

func (s *Server) enqueue(j *intakeJob) {
	s.intakeMu.Lock()
	s.intakeQ = append(s.intakeQ, j)
	start := !s.intakeBusy
	s.intakeBusy = true
	if start {
		s.intakeWG.Add(1)
	}
	s.intakeMu.Unlock()
	if start {
		go s.drainIntake()
	}
}

// drainIntake runs the queued jobs, as many at once as fit in
// MaxIngestBytes, until the queue is empty. Two such calls are in flight
// at most: one is validated and redacted while the one before it is
// appended and folded (a call takes its place in the log order only
// once the call before it has, and reports after it).
func (s *Server) drainIntake() {
	defer s.intakeWG.Done()
	for {
		// The slot first: jobs that queue while both are taken join the
		// next call.
		s.intakeSlots <- struct{}{}
		s.intakeMu.Lock()
		n, size := 0, 0
		for n < len(s.intakeQ) && (n == 0 || size+s.intakeQ[n].size <= observer.MaxIngestBytes) {
			size += s.intakeQ[n].size
			n++
		}
		if n == 0 {
			s.intakeBusy = false
			s.intakeMu.Unlock()
			<-s.intakeSlots
			return
		}
		jobs := append([]*intakeJob(nil), s.intakeQ[:n]...)
		s.intakeQ = append(s.intakeQ[:0], s.intakeQ[n:]...)
		c := intakeCall{jobs: jobs, afterStaged: s.intakeStaged, afterDone: s.intakeDone,
			staged: make(chan struct{}), done: make(chan struct{})}
		s.intakeStaged, s.intakeDone = c.staged, c.done
		s.intakeWG.Add(1)
		s.intakeMu.Unlock()
		go s.runIntake(c)
	}
}

// intakeCall is one Engine call of the intake and its place in their
// order: it is staged after afterStaged is closed and reports after
// afterDone is.
type intakeCall struct {
	jobs                   []*intakeJob
	afterStaged, afterDone <-chan struct{}
	staged, done           chan struct{}
}

func (s *Server) runIntake(c intakeCall) {
	defer s.intakeWG.Done()
	defer func() { <-s.intakeSlots }()
	defer close(c.done)
	jobs := c.jobs
	var all [][]byte
	for _, j := range jobs {
		all = append(all, j.lines...)
	}
	t0 := time.Now()
	prep := s.eng.Prepare(all)
	waitFrom := time.Now()
	<-c.afterStaged
	wait := time.Since(waitFrom)
	var once sync.Once
	staged := func() { once.Do(func() { close(c.staged) }) }
	// Not a request's context: the call serves several requests, and an
	// intake is short and must not be cut in half by one client leaving.
	_, outs, err := s.eng.IngestPrepared(context.Background(), prep, staged)
	staged()
	s.metrics.Ingest.Observe(time.Since(t0) - wait) // not the wait for the call before
	intakeIngested(c.jobs)
	// The broker observes the calls' events in their order.
	<-c.afterDone
	s.metrics.IntakeCalls.Add(1)
	off := 0
	for _, j := range jobs {
		if outs != nil {
			j.outs = outs[off : off+len(j.lines)]
			for i := range j.outs {
				j.outs[i].Line = i + 1
				switch j.outs[i].Status {
				case observer.StatusAppended:
					j.res.Appended++
				case observer.StatusDuplicate:
					j.res.Duplicates++
				case observer.StatusRejected:
					j.res.Rejected++
				}
			}
		}
		off += len(j.lines)
		// A failure concerns a job when it left some of its events
		// undecided, or when its appended events were not indexed.
		if err != nil && (outs == nil || j.res.Appended > 0 || slices.ContainsFunc(j.outs, func(o observer.Outcome) bool { return o.Status == "" })) {
			j.err = err
		}
		if j.done == nil {
			s.finishShown(j)
			continue
		}
		for _, o := range j.outs {
			if o.Status == observer.StatusAppended && o.Event != nil {
				j.observed = append(j.observed, *o.Event)
			}
		}
		if len(j.observed) > 0 {
			intakeObserve(s, j.observed)
			if s.opts.AutoCheckpoint > 0 && endsSession(j.observed) {
				s.life.kick()
			}
		}
		close(j.done)
	}
}

// Seams for tests: intakeIngested runs once an intake call's events are
// appended and folded, before it waits for the call before it to report;
// intakeObserve hands a job's appended events to the broker.
var (
	intakeIngested = func([]*intakeJob) {}
	intakeObserve  = func(s *Server, evs []events.Envelope) { s.broker.Observe(evs) }
)

func (s *Server) finishShown(j *intakeJob) {
	err := j.err
	for _, o := range j.outs {
		if o.Status == observer.StatusRejected {
			err = errors.Join(err, o.Error)
		}
	}
	if err != nil {
		s.metrics.ShownErrors.Add(1)
		s.opts.Logf("record memory shown: %v", err)
	}
}

// recordShown queues the memory/shown event of a served packet or recall
// (event data {entries, session, mode}, as Engine.RecordShown writes it).
// It goes through the intake after the response, so a fetch never waits
// for an fsync, and it shares the intake call of whatever events arrive
// meanwhile. Shutdown waits for it.
func (s *Server) recordShown(session, cwd, mode string, ids []string) {
	at := s.opts.Now()
	s.intakeMu.Lock()
	// The writer picks the id (ARCHITECTURE §4): session and time, made
	// unique within this server by lastShown.
	ns := at.UnixNano()
	if ns <= s.lastShown {
		ns = s.lastShown + 1
	}
	s.lastShown = ns
	s.intakeMu.Unlock()
	line, err := observer.ShownLine(session, cwd, mode, ids, at, ns)
	if err != nil {
		s.metrics.ShownErrors.Add(1)
		s.opts.Logf("record memory shown: %v", err)
		return
	}
	s.enqueue(&intakeJob{lines: [][]byte{line}, size: len(line)})
}
