package observer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Input of any size is ingested as a stream of calls, each under the cap
// of one call (MaxIngestBytes): `dshmem ingest FILE` with a 1M-event
// export, or an import. Line numbers stay those of the whole input.

// DefaultCallLines caps the lines of one call of a stream: large enough
// to amortize a fold's commit, small enough to keep two calls in flight
// (one folding while the next appends) in little memory.
const DefaultCallLines = 5000

// Call is one call's worth of an input stream: non-blank lines with
// their line numbers in the whole input, and how many bytes of the input
// were read up to and including it.
type Call struct {
	Lines [][]byte
	Nums  []int
	Read  int64
}

// Body is the call as an ingest body (JSONL): at most the cap it was
// split under.
func (c Call) Body() []byte {
	var b bytes.Buffer
	for _, l := range c.Lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// SplitCalls reads JSONL from r and hands fn the input in calls of at
// most maxBytes (line ends included) and maxLines lines, in order. It
// reads lines like SplitLines (1-based numbers counting blank lines,
// "\r\n" accepted, a leading byte order mark dropped, a line longer than
// MaxEventBytes handed on cut to MaxEventBytes+1 bytes so that Validate
// rejects it) but never holds more than one call. maxBytes ≤ 0 means
// MaxIngestBytes, maxLines ≤ 0 DefaultCallLines. An error from fn stops
// the read and is returned as is.
func SplitCalls(r io.Reader, maxBytes, maxLines int, fn func(Call) error) error {
	if maxBytes <= 0 || maxBytes > MaxIngestBytes {
		maxBytes = MaxIngestBytes
	}
	if maxLines <= 0 {
		maxLines = DefaultCallLines
	}
	br := bufio.NewReaderSize(r, 256<<10)
	var (
		c     Call
		size  int
		read  int64
		buf   []byte // the current call's bytes; lines point into it
		first = true
	)
	flush := func() error {
		if len(c.Lines) == 0 {
			return nil
		}
		c.Read = read
		err := fn(c)
		c, size, buf = Call{}, 0, nil
		return err
	}
	for lineNo := 1; ; lineNo++ {
		line, n, err := readLine(br)
		read += int64(n)
		if err != nil && err != io.EOF {
			return fmt.Errorf("read ingest: %w", err)
		}
		if n == 0 && err == io.EOF {
			break
		}
		if first {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
			first = false
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if !blank(line) {
			if len(c.Lines) > 0 && (size+len(line)+1 > maxBytes || len(c.Lines) >= maxLines) {
				if err := flush(); err != nil {
					return err
				}
			}
			if buf == nil {
				buf = make([]byte, 0, min(maxBytes, 1<<20))
			}
			if len(buf)+len(line) > cap(buf) {
				// Lines already handed out keep pointing at the old array.
				nb := make([]byte, 0, max(2*cap(buf), len(line)))
				buf = nb
			}
			start := len(buf)
			buf = append(buf, line...)
			c.Lines = append(c.Lines, buf[start:len(buf):len(buf)])
			c.Nums = append(c.Nums, lineNo)
			size += len(line) + 1
		}
		if err == io.EOF {
			break
		}
	}
	return flush()
}

// readLine returns the next line without its '\n', cut to
// MaxEventBytes+1 bytes (the rest of a longer line is read and dropped),
// and the number of input bytes it took. The slice is valid until the
// next call.
func readLine(br *bufio.Reader) ([]byte, int, error) {
	var long []byte
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if err == bufio.ErrBufferFull {
			if len(long) <= MaxEventBytes {
				long = append(long, frag[:min(len(frag), MaxEventBytes+1-len(long))]...)
			}
			continue
		}
		frag = bytes.TrimSuffix(frag, []byte{'\n'})
		if long != nil {
			if len(long) <= MaxEventBytes {
				long = append(long, frag[:min(len(frag), MaxEventBytes+1-len(long))]...)
			}
			frag = long
		} else if len(frag) > MaxEventBytes {
			frag = frag[:MaxEventBytes+1]
		}
		if err != nil && err != io.EOF {
			return nil, n, err
		}
		return frag, n, err
	}
}

// StreamOptions configure IngestStream. The zero value works.
type StreamOptions struct {
	MaxCallBytes int // ≤ 0: MaxIngestBytes
	MaxCallLines int // ≤ 0: DefaultCallLines
	// Progress, when set, is told after each call how many events the
	// calls so far decided (appended, duplicate or rejected) and how
	// many input bytes they covered.
	Progress func(events int64, bytesRead int64)
	// Rejected, when set, gets every rejected line's outcome, with its
	// line number in the whole input, in input order.
	Rejected func(Outcome)
}

// IngestStream ingests JSONL of any size from r: it splits the input
// into calls under the cap of one call and ingests them in input order,
// two in flight (one call validates and appends while the one before it
// folds). Each call is validated, deduped and appended exactly as one
// `dshmem ingest` call is, and the calls keep the input's order (a
// session's cwd learnt in one call resolves the next). It returns the
// totals; the error is that of the first call that failed, after which
// nothing more is sent.
func (e *Engine) IngestStream(ctx context.Context, r io.Reader, o StreamOptions) (IngestResult, error) {
	if e.log == nil {
		return IngestResult{}, ErrReadOnly
	}
	type result struct {
		res  IngestResult
		outs []Outcome
		read int64
	}
	var (
		total   IngestResult
		decided int64
		prev    = closedChan() // staged signal of the call before
	)
	q := NewInOrder(2, func(r result, _ error) {
		total.Appended += r.res.Appended
		total.Duplicates += r.res.Duplicates
		total.Rejected += r.res.Rejected
		decided += int64(r.res.Appended + r.res.Duplicates + r.res.Rejected)
		if o.Rejected != nil {
			for _, out := range r.outs {
				if out.Status == StatusRejected {
					o.Rejected(out)
				}
			}
		}
		if o.Progress != nil {
			o.Progress(decided, r.read)
		}
	}, nil)
	splitErr := SplitCalls(r, o.MaxCallBytes, o.MaxCallLines, func(c Call) error {
		staged := make(chan struct{})
		var once sync.Once
		signal := func() { once.Do(func() { close(staged) }) }
		wait := prev
		prev = staged
		return q.Go(ctx, func() (result, error) {
			defer signal()
			p := e.prepare(c.Lines, c.Nums) // beside the call before's append and fold
			<-wait                          // the call before holds the intake lock (or is done)
			res, outs, err := e.ingest(ctx, p.items, p.out, signal)
			return result{res: res, outs: outs, read: c.Read}, err
		})
	})
	if err := q.Wait(); err != nil {
		return total, err
	}
	if splitErr != nil && !errors.Is(splitErr, ErrInOrderStopped) {
		return total, splitErr
	}
	return total, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
