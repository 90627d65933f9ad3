package madial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/projector"
	"dshmem/sqlstore"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"
)

// recallRetriever answers Run through recall.Find: the first time it
// sees a user, it folds that user's memories into a fresh index as
// memory/remember events (content = the event sentence, tags = scene and
// emotion, time = the memory's date), exactly as ingest would. The first
// error sticks in err and makes every later call rank nothing.
type recallRetriever struct {
	ctx     context.Context
	dir     string
	weights *recall.Weights // nil: recall.DefaultWeights
	// dense, when set, gives each index its vectors (vectors.Fill, as the
	// server's background fill does) and recall its Dense: the real
	// recall path with the encoder.
	dense  *vectors.Dense
	stores map[int]*userIndex
	err    error
}

type userIndex struct {
	s   *sqlstore.Store
	ids map[string]int // entry id → memory id
	now time.Time
}

// recallStream is the stream the memories are folded into.
const recallStream = "global"

func (r *recallRetriever) index(user int, mems []Memory) (*userIndex, error) {
	if ui, ok := r.stores[user]; ok {
		return ui, nil
	}
	var fill func(*sqlstore.Store) error
	if r.dense != nil {
		fill = func(s *sqlstore.Store) error {
			_, err := vectors.Fill(r.ctx, s, r.dense.Model(), vectors.FillOptions{Workers: runtime.NumCPU()})
			return err
		}
	}
	ui, err := foldBank(r.ctx, filepath.Join(r.dir, fmt.Sprintf("user-%d.db", user)), mems, fill)
	if err != nil {
		return nil, err
	}
	if r.stores == nil {
		r.stores = map[int]*userIndex{}
	}
	r.stores[user] = ui
	return ui, nil
}

// foldBank folds mems into a fresh index at path as memory/remember
// events, one a memory in order (seq i+1), then runs fill (nil: none) on
// it. Its now is the day after the newest memory.
func foldBank(ctx context.Context, path string, mems []Memory, fill func(*sqlstore.Store) error) (*userIndex, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	s, err := sqlstore.Open(path)
	if err != nil {
		return nil, err
	}
	ui := &userIndex{s: s, ids: map[string]int{}}
	evs := make([]events.Envelope, 0, len(mems))
	for i, m := range mems {
		t, err := time.Parse("2006-01-02", m.Time)
		if err != nil {
			t = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		if t.After(ui.now) {
			ui.now = t
		}
		data, _ := payload.Marshal(payload.Remember{Content: m.Text, Tags: []string{m.Scene, m.Emotion}}) // strings: cannot fail
		seq := uint64(i + 1)
		evs = append(evs, events.Envelope{V: events.CurrentVersion, Stream: recallStream, Seq: seq,
			ID: fmt.Sprintf("madial:%d", m.ID), Type: events.TypeMemoryRemember, Time: t.Format(time.RFC3339), Data: data})
		ui.ids[projector.EntryID(recallStream, seq, 0)] = m.ID
	}
	if err := projector.New(s).Fold(ctx, evs); err != nil {
		s.Close()
		return nil, err
	}
	if fill != nil {
		if err := fill(s); err != nil {
			s.Close()
			return nil, err
		}
	}
	ui.now = ui.now.Add(24 * time.Hour)
	return ui, nil
}

// Rank implements Retriever.
func (r *recallRetriever) Rank(c Case, candidates []Memory, k int) []int {
	return ids(r.RankScored(c, candidates, k))
}

// RankScored implements ScoredRetriever: the recall path's items and
// their scores.
func (r *recallRetriever) RankScored(c Case, candidates []Memory, k int) []recall.Ranked[int] {
	if r.err != nil {
		return nil
	}
	ui, err := r.index(c.UserID, candidates)
	if err != nil {
		r.err = err
		return nil
	}
	res, err := recall.Find(r.ctx, ui.s, recall.Query{Text: c.Query, Limit: k, Bytes: -1, NoFloor: true,
		Now: ui.now, Timeout: 10 * time.Second, Weights: r.weights, Dense: r.dense})
	if err != nil {
		r.err = err
		return nil
	}
	if res.Partial {
		r.err = fmt.Errorf("case %d: %s", c.ID, res.Note)
		return nil
	}
	out := make([]recall.Ranked[int], 0, len(res.Items))
	for _, it := range res.Items {
		if id, ok := ui.ids[it.ID]; ok {
			out = append(out, recall.Ranked[int]{ID: id, Score: it.Score})
		}
	}
	return out
}

func (r *recallRetriever) close() {
	for _, ui := range r.stores {
		ui.s.Close()
	}
}
