package distilleval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"dshmem/events/payload"
)

// Splits of the corpus, each in its own file of the corpus directory.
const (
	SplitTune = "tune"
	SplitTest = "test"
)

// Case is one labelled utterance in context.
type Case struct {
	ID        string   `json:"id"`
	Lang      string   `json:"lang"`
	Split     string   `json:"split"`
	Kind      string   `json:"kind"`
	Context   Context  `json:"context"`
	Utterance Turn     `json:"utterance"`
	Expect    []Expect `json:"expect"`
}

// Context is what precedes the utterance: the existing entries and the
// earlier turns of the conversation.
type Context struct {
	Entries []Entry `json:"entries"`
	Turns   []Turn  `json:"turns"`
}

// Entry is an existing memory entry of a case.
type Entry struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Content string `json:"content"`
}

// Turn is one message: role user, assistant or tool; Injected marks a
// user-role message the host put there.
type Turn struct {
	Role     string `json:"role"`
	Text     string `json:"text"`
	Injected bool   `json:"injected,omitempty"`
}

// Expect is one op a careful person would make: Op is add, revise,
// supersede, conflict or forget; Target the entry aimed at (all but add);
// Type the entry type (compared for add only).
type Expect struct {
	Op     string `json:"op"`
	Target string `json:"target,omitempty"`
	Type   string `json:"type,omitempty"`
}

// File is the corpus file of a split.
func File(dir, split string) string { return filepath.Join(dir, split+".jsonl") }

// Load reads the cases of the given splits ("tune", "test") from dir, in
// file order. A malformed case is an error naming its file and line.
func Load(dir string, splits ...string) ([]Case, error) {
	var out []Case
	ids := make(map[string]string)
	for _, split := range splits {
		if split != SplitTune && split != SplitTest {
			return nil, fmt.Errorf("unknown split %q: use %s or %s", split, SplitTune, SplitTest)
		}
		name := File(dir, split)
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read corpus: %w (is %s the corpus directory, testdata/distill/corpus?)", err, dir)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var c Case
			dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if err := c.check(split); err != nil {
				return nil, fmt.Errorf("%s:%d: case %q: %w", name, line, c.ID, err)
			}
			if prev, dup := ids[c.ID]; dup {
				return nil, fmt.Errorf("%s:%d: case id %q already used at %s", name, line, c.ID, prev)
			}
			ids[c.ID] = fmt.Sprintf("%s:%d", name, line)
			out = append(out, c)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return out, nil
}

var roles = []string{"user", "assistant", "tool"}

// check reports what is wrong with a case read from the file of split.
func (c Case) check(split string) error {
	switch {
	case c.ID == "":
		return fmt.Errorf("no id")
	case c.Lang != "en" && c.Lang != "zh":
		return fmt.Errorf("lang %q: want en or zh", c.Lang)
	case c.Split != split:
		return fmt.Errorf("split %q in the %s file", c.Split, split)
	case c.Utterance.Text == "":
		return fmt.Errorf("empty utterance")
	}
	for _, t := range append(slices.Clone(c.Context.Turns), c.Utterance) {
		if !slices.Contains(roles, t.Role) {
			return fmt.Errorf("role %q: want user, assistant or tool", t.Role)
		}
		if t.Injected && t.Role != "user" {
			return fmt.Errorf("injected %s turn: only a user-role message is injected", t.Role)
		}
	}
	entries := make(map[string]bool)
	for _, e := range c.Context.Entries {
		if e.ID == "" || entries[e.ID] {
			return fmt.Errorf("entry id %q empty or repeated", e.ID)
		}
		entries[e.ID] = true
	}
	for _, x := range c.Expect {
		if !payload.KnownOp(x.Op) {
			return fmt.Errorf("expected op %q: want add, revise, supersede, conflict or forget", x.Op)
		}
		if x.Op == payload.OpAdd {
			if !slices.Contains(payload.EntryTypes, x.Type) {
				return fmt.Errorf("expected add of type %q: want one of %v", x.Type, payload.EntryTypes)
			}
			continue
		}
		if !entries[x.Target] {
			return fmt.Errorf("expected %s aims at %q, which is not one of the case's entries", x.Op, x.Target)
		}
	}
	return nil
}
