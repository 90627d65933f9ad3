package vectors

import (
	"context"
	"sync"
	"unicode/utf8"

	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
)

// FillOptions configure Fill. The zero value works.
type FillOptions struct {
	// Workers is how many texts are encoded at once (0: 1). The server
	// keeps one, so encoding never takes both cores from its requests;
	// replay uses every core.
	Workers int
	// Batch is the texts stored per transaction (0: 64): each holds the
	// index's write lock for a few milliseconds only, so a fold on the
	// acknowledgement path waits at most that long.
	Batch int
	// Encode, when set, replaces the model's forward pass (the unit
	// vector of an English text): `dshmem bench recall --vectors` fills a
	// million-record root with stand-ins in minutes rather than hours,
	// since what a scan costs does not depend on what the vectors hold.
	Encode func(text string) []float32
}

// FillReport counts what one Fill did.
type FillReport struct {
	Encoded    int   `json:"encoded"`    // texts given a vector
	NotEnglish int   `json:"notEnglish"` // texts looked at that get none
	Dropped    int64 `json:"dropped"`    // vectors of forgotten, superseded or purged text, or of another model
}

// Add adds what another fill did to r.
func (r *FillReport) Add(o FillReport) {
	r.Encoded += o.Encoded
	r.NotEnglish += o.NotEnglish
	r.Dropped += o.Dropped
}

// maxTextBytes is how much of a text is tokenized: the model reads its
// first encoder.MaxPieces pieces, which English text fills within a
// kilobyte or two; a 256 KiB tool result is not tokenized whole for them.
const maxTextBytes = 8 << 10

// Fill gives every English text of s that has no vector of m one (m may
// be nil when o.Encode is set), and
// drops the vectors of entries that are no longer active or conflict,
// until nothing is left or ctx ends (then it returns ctx's error with
// what it did). Each batch commits on its own, so a Fill cut short keeps
// what it stored.
func Fill(ctx context.Context, s *sqlstore.Store, m *Model, o FillOptions) (FillReport, error) {
	var rep FillReport
	workers := max(o.Workers, 1)
	batch := o.Batch
	if batch <= 0 {
		batch = 64
	}
	n, err := s.DropStaleVectors(ctx, encoder.ModelVersion)
	rep.Dropped += n
	if err != nil {
		return rep, err
	}
	var encs []*encoder.Encoder
	if m != nil {
		encs = m.encoders(workers)
	} else {
		encs = make([]*encoder.Encoder, workers) // o.Encode encodes
	}
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		st, err := s.VectorState(ctx)
		if err != nil {
			return rep, err
		}
		texts, err := s.PendingEntryVectors(ctx, encoder.ModelVersion, batch)
		if err != nil {
			return rep, err
		}
		if len(texts) == 0 {
			break
		}
		vs := encodeAll(encs, o.Encode, texts, &rep, true)
		if err := s.PutVectors(ctx, st.Epoch, vs, 0, 0); err != nil {
			return rep, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		st, err := s.VectorState(ctx)
		if err != nil {
			return rep, err
		}
		texts, from, err := s.PendingEpisodeVectors(ctx, batch)
		if err != nil {
			return rep, err
		}
		if len(texts) == 0 {
			break
		}
		vs := encodeAll(encs, o.Encode, texts, &rep, false)
		if err := s.PutVectors(ctx, st.Epoch, vs, from, texts[len(texts)-1].N); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// encodeAll encodes the English texts with the encoders, one goroutine
// each; with marks, a text that is not English gets a row without a
// vector (entries), else none (episodes).
func encodeAll(encs []*encoder.Encoder, encode func(string) []float32, texts []sqlstore.VectorText, rep *FillReport, marks bool) []sqlstore.Vector {
	out := make([]sqlstore.Vector, len(texts))
	keep := make([]bool, len(texts))
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range encs {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(texts) {
					return
				}
				t := &texts[i]
				v := sqlstore.Vector{Kind: t.Kind, Stream: t.Stream, Seq: t.Seq, Entry: t.Entry, Version: t.Version,
					Model: encoder.ModelID, ModelVersion: encoder.ModelVersion}
				text := cut(t.Text, maxTextBytes)
				if encoder.English(text) {
					var f []float32
					if encode != nil {
						f = encode(text)
					} else {
						f = e.Encode(nil, text)
					}
					v.Scale, v.Code = Quantize(f)
					keep[i] = true
				} else {
					keep[i] = marks
				}
				out[i] = v
			}
		})
	}
	wg.Wait()
	vs := out[:0]
	for i, v := range out {
		if v.Code != nil {
			rep.Encoded++
		} else {
			rep.NotEnglish++
		}
		if keep[i] {
			vs = append(vs, v)
		}
	}
	return vs
}

// cut returns the first n bytes of s or fewer, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
