package madial

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"dshmem/sqlstore"
	"dshmem/sqlstore/encoder"
	"dshmem/sqlstore/recall"
	"dshmem/sqlstore/vectors"
)

// FloorLimit is how many items a floored recall returns per case: the
// R@10 of the figures, and about what a packet or 'dshmem recall' asks
// for (recall.DefaultLimit, 8).
const FloorLimit = 10

// Floored are the figures of recall.Find with its floors on (NoFloor
// false), as recall, search and packets run it, beside a Result's
// Recall@k (k ≤ FloorLimit) of the floored items: how many items are
// shown, and how many where nothing should be. Counts are means per case.
type Floored struct {
	// Query is "dialogue" (Case.Query, what the eval ranks by) or "last
	// line" (LastUserLine: what a packet's query is, the last prompt).
	Query string `json:"query"`
	// DenseFloor is recall.Weights.DenseFloor; +Inf ("off", no dense
	// score passes the absolute floors) is written as 2 in JSON.
	DenseFloor float64 `json:"denseFloor"`
	// Shown: items returned from the user's own memories; Gold: how many
	// of them are labelled relevant.
	Shown float64 `json:"shown"`
	Gold  float64 `json:"gold"`
	// NoGold: items returned from the user's memories less the case's
	// labelled ones, what is shown when the memory the dialogue calls for
	// is not there; NoGoldAny: the share of cases shown at least one.
	NoGold    float64 `json:"noGold"`
	NoGoldAny float64 `json:"noGoldAny"`
	// Other: items returned from another user's memories (Bart's
	// dialogues against Lisa's, and back), none of them the user's;
	// OtherAny: the share of cases shown at least one.
	Other    float64 `json:"other"`
	OtherAny float64 `json:"otherAny"`
}

// DenseFloorOff is a DenseFloor no normalised dense score reaches.
var DenseFloorOff = math.Inf(1)

// FloorOptions configure Floors. The zero value works.
type FloorOptions struct {
	// Weights of the ranking (nil: recall.DefaultWeights); DenseFloor is
	// replaced by each of DenseFloors.
	Weights *recall.Weights
	// DenseFloors are the values run with the vectors (nil: the default
	// weight and off).
	DenseFloors []float64
}

// Floors runs the cases of lang in dir through recall.Find with the
// floors on and at most FloorLimit items, each case's dialogue and then
// its LastUserLine as the query: first with the words alone, then with
// the encoder's vectors (m) at each of o.DenseFloors, against three
// banks per case: the user's memories, the same less the case's labelled
// ones (a fresh index per case, about 80 ms to fold), and the next
// user's. Every memory is encoded once (the banks share its vector, as
// Fill would compute it). Retriever names a row: "floors, words" or
// "floors, DenseFloor X" ("off" for DenseFloorOff), with " (last line)"
// for the last line's rows, which follow the dialogue's.
func Floors(ctx context.Context, dir, lang string, m *encoder.Model, o FloorOptions) ([]Result, error) {
	w := o.Weights
	if w == nil {
		w = &recall.DefaultWeights
	}
	floors := o.DenseFloors
	if floors == nil {
		floors = []float64{w.DenseFloor, DenseFloorOff}
	}
	memories, cases, err := Load(dir, lang)
	if err != nil {
		return nil, fmt.Errorf("floors: %w", err)
	}
	tmp, err := os.MkdirTemp("", "dshmem-floors-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	byUser := map[int][]Memory{}
	var users []int
	for _, mm := range memories {
		if byUser[mm.UserID] == nil {
			users = append(users, mm.UserID)
		}
		byUser[mm.UserID] = append(byUser[mm.UserID], mm)
	}
	slices.Sort(users)
	if len(users) < 2 {
		return nil, fmt.Errorf("floors: %s (%s) holds the memories of %d user, want two or more: each case is also run against another user's", dir, lang, len(users))
	}
	fill := memoFill(ctx, m)
	var open []*userIndex
	defer func() {
		for _, ui := range open {
			ui.s.Close()
		}
	}()
	bank := func(name string, mems []Memory) (*userIndex, error) {
		ui, err := foldBank(ctx, filepath.Join(tmp, name+".db"), mems, fill)
		if ui != nil {
			open = append(open, ui)
		}
		return ui, err
	}
	full := map[int]*userIndex{}
	for _, u := range users {
		if full[u], err = bank(fmt.Sprintf("user-%d", u), byUser[u]); err != nil {
			return nil, fmt.Errorf("floors: user %d: %w", u, err)
		}
	}
	other := func(u int) *userIndex { return full[users[(slices.Index(users, u)+1)%len(users)]] }

	type config struct {
		name     string
		lastLine bool
		dense    *vectors.Dense
		w        recall.Weights
		f        Floored
		top      map[int][]int // case → floored ids from the user's memories
	}
	d := vectors.NewDense(vectors.NewModel(m))
	var configs []*config
	for _, q := range []struct {
		last         bool
		name, suffix string
	}{{false, "dialogue", ""}, {true, "last line", " (last line)"}} {
		configs = append(configs, &config{name: "floors, words" + q.suffix, lastLine: q.last, w: *w,
			f: Floored{Query: q.name, DenseFloor: w.DenseFloor}})
		for _, f := range floors {
			c := &config{lastLine: q.last, dense: d, w: *w, f: Floored{Query: q.name, DenseFloor: f}}
			c.w.DenseFloor = f
			c.name = "floors, DenseFloor off" + q.suffix
			if f <= 1 {
				c.name = fmt.Sprintf("floors, DenseFloor %.2f%s", f, q.suffix)
			}
			configs = append(configs, c)
		}
	}
	find := func(c *config, ui *userIndex, q string, now time.Time) ([]int, error) {
		res, err := recall.Find(ctx, ui.s, recall.Query{Text: q, Limit: FloorLimit, Bytes: -1,
			Now: now, Timeout: 10 * time.Second, Weights: &c.w, Dense: c.dense})
		if err != nil {
			return nil, err
		}
		if res.Partial {
			return nil, fmt.Errorf("recall cut short: %s", res.Note)
		}
		out := make([]int, 0, len(res.Items))
		for _, it := range res.Items {
			out = append(out, ui.ids[it.ID])
		}
		return out, nil
	}
	n := 0
	for _, cs := range cases {
		if len(cs.Relevant) == 0 {
			continue
		}
		n++
		last := LastUserLine(cs)
		own, theirs := full[cs.UserID], other(cs.UserID)
		rest := slices.DeleteFunc(slices.Clone(byUser[cs.UserID]), func(mm Memory) bool { return slices.Contains(cs.Relevant, mm.ID) })
		nogold, err := bank(fmt.Sprintf("case-%d", cs.ID), rest)
		if err != nil {
			return nil, fmt.Errorf("floors: case %d: %w", cs.ID, err)
		}
		for _, c := range configs {
			q := cs.Query
			if c.lastLine {
				q = last
			}
			got, err := find(c, own, q, own.now)
			if err != nil {
				return nil, fmt.Errorf("floors: case %d: %w", cs.ID, err)
			}
			if c.top == nil {
				c.top = map[int][]int{}
			}
			c.top[cs.ID] = got
			c.f.Shown += float64(len(got))
			for _, id := range got {
				if slices.Contains(cs.Relevant, id) {
					c.f.Gold++
				}
			}
			// The bank less the labelled memories keeps the user's clock.
			if got, err = find(c, nogold, q, own.now); err != nil {
				return nil, fmt.Errorf("floors: case %d without its labelled memories: %w", cs.ID, err)
			}
			c.f.NoGold += float64(len(got))
			if len(got) > 0 {
				c.f.NoGoldAny++
			}
			if got, err = find(c, theirs, q, theirs.now); err != nil {
				return nil, fmt.Errorf("floors: case %d against another user's memories: %w", cs.ID, err)
			}
			c.f.Other += float64(len(got))
			if len(got) > 0 {
				c.f.OtherAny++
			}
		}
		nogold.s.Close()
		open = open[:len(open)-1]
	}
	if n == 0 {
		return nil, fmt.Errorf("floors: %s (%s) has no case with a labelled memory", dir, lang)
	}
	rows := make([]Result, 0, len(configs))
	for _, c := range configs {
		r := newResult(lang, c.name, Evaluate(c.top, cases))
		for k := range r.Recall {
			if kk, _ := strconv.Atoi(k); kk > FloorLimit {
				delete(r.Recall, k) // the floored list holds FloorLimit
			}
		}
		f := c.f
		if f.DenseFloor > 1 {
			f.DenseFloor = 2
		}
		for _, v := range []*float64{&f.Shown, &f.Gold, &f.NoGold, &f.NoGoldAny, &f.Other, &f.OtherAny} {
			*v /= float64(n)
		}
		r.Floors = &f
		rows = append(rows, r)
	}
	return rows, nil
}

// LastUserLine is the text of the case's last line before its test turn
// spoken by the user rather than the assistant, without the speaker tag
// and the quotes: what a packet asks recall with (the session's last
// prompt). A case with no such line gives its Query.
func LastUserLine(c Case) string {
	for i := len(c.Turns) - 1; i >= 0; i-- {
		t := strings.TrimSpace(c.Turns[i])
		j := strings.Index(t, ">:")
		if !strings.HasPrefix(t, "<") || j < 0 || t[1:j] == "Assistant" {
			continue
		}
		return strings.Trim(strings.TrimSpace(t[j+2:]), "\"“”")
	}
	return c.Query
}

// memoFill fills an index's vectors as vectors.Fill does, encoding each
// distinct text once across every index it fills.
func memoFill(ctx context.Context, m *encoder.Model) func(*sqlstore.Store) error {
	var mu sync.Mutex
	e := m.NewEncoder()
	seen := map[string][]float32{}
	encode := func(text string) []float32 {
		mu.Lock()
		defer mu.Unlock()
		v, ok := seen[text]
		if !ok {
			v = e.Encode(nil, text)
			seen[text] = v
		}
		return v
	}
	return func(s *sqlstore.Store) error {
		_, err := vectors.Fill(ctx, s, nil, vectors.FillOptions{Encode: encode})
		return err
	}
}
