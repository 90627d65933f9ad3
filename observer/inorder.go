package observer

import (
	"context"
	"errors"
	"sync"
)

// InOrder runs jobs with a bounded number in flight and hands their
// results to a collector in the order the jobs were started, as
// `dshmem ingest` sends its calls: the next call is on its way (to the
// server, or through validation) while the one before it is appended
// and folded, and the totals and rejected lines are reported in input
// order.
//
// The first job that fails stops the run: no job starts after its
// error is known (Go returns ErrInOrderStopped), and once its result
// reaches the collector, in order, onFail runs (once), before the failed
// job's slot is given back. Every job that started is collected;
// onFail is where a caller cancels the jobs behind the failed one.
type InOrder[R any] struct {
	slots   chan struct{}
	order   chan chan inOrderResult[R]
	stop    chan struct{}
	stopped sync.Once
	onFail  func()
	done    chan struct{}
	first   error
}

type inOrderResult[R any] struct {
	r   R
	err error
}

// ErrInOrderStopped is what InOrder.Go returns after a job has failed.
var ErrInOrderStopped = errors.New("stopped after a failed call")

// NewInOrder starts the collector: collect gets each job's result and
// error in start order, on one goroutine. inFlight is at least 1;
// onFail may be nil.
func NewInOrder[R any](inFlight int, collect func(R, error), onFail func()) *InOrder[R] {
	q := &InOrder[R]{
		slots:  make(chan struct{}, max(inFlight, 1)),
		order:  make(chan chan inOrderResult[R], max(inFlight, 1)),
		stop:   make(chan struct{}),
		onFail: onFail,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(q.done)
		for ch := range q.order {
			res := <-ch
			collect(res.r, res.err)
			if res.err != nil && q.first == nil {
				q.first = res.err
				q.halt()
				if q.onFail != nil {
					q.onFail()
				}
			}
			<-q.slots
		}
	}()
	return q
}

func (q *InOrder[R]) halt() { q.stopped.Do(func() { close(q.stop) }) }

// Go waits for a free slot and runs job on its own goroutine. It
// returns ErrInOrderStopped once a job has failed, or ctx's error; then
// job does not run. Go is called from one goroutine at a time.
func (q *InOrder[R]) Go(ctx context.Context, job func() (R, error)) error {
	select {
	case q.slots <- struct{}{}:
	case <-q.stop:
		return ErrInOrderStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-q.stop: // the slot came free as a job failed
		<-q.slots
		return ErrInOrderStopped
	default:
	}
	ch := make(chan inOrderResult[R], 1)
	q.order <- ch
	go func() {
		r, err := job()
		if err != nil {
			q.halt() // no job starts from now on
		}
		ch <- inOrderResult[R]{r, err}
	}()
	return nil
}

// Wait waits until every started job has been collected and returns
// the first job's error, in start order; Go must not be called after.
func (q *InOrder[R]) Wait() error {
	close(q.order)
	<-q.done
	return q.first
}
