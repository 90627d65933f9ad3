package madial

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary memory, dialogue and ranking files to the
// decoders Load and LoadBaselines use (seeded with the testdata subset). It
// works on readers, not files: nothing may panic, and whatever decodes must
// hold the invariants Load promises.
func FuzzDecode(f *testing.F) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(subsetDir, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	rank := read("baselines-zh/openai_zh_top_20_ids.json")
	for _, lang := range []string{"zh", "en"} {
		f.Add(read("MADial-Bench-"+lang+"-memory.json"), read("MADial-Bench-"+lang+"-dialogue.json"), rank)
	}
	f.Add([]byte(memLine1), []byte(diaOK), []byte(`{"id": 0, "top_20_ids": [1]}`))
	f.Add([]byte(`{"1": {"event": "a", "user-id": 1}}`), []byte(`{"dialogue": [], "test-turn": [0], "relevant-id": [1], "user-id": 1}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, mem, dia, ranking []byte) {
		decodeBaseline(bytes.NewReader(ranking), "ranking")
		mems, err := decodeMemories(bytes.NewReader(mem), "memory")
		if err != nil {
			return
		}
		byID := make(map[int]*Memory, len(mems))
		for i, m := range mems {
			if _, dup := byID[m.ID]; dup {
				t.Fatalf("memory %d decoded twice", m.ID)
			}
			byID[m.ID] = &mems[i]
		}
		cases, err := decodeCases(bytes.NewReader(dia), "dialogue", byID)
		if err != nil {
			return
		}
		seen := make(map[int]bool, len(cases))
		for _, c := range cases {
			if seen[c.ID] {
				t.Fatalf("case %d decoded twice", c.ID)
			}
			seen[c.ID] = true
			if len(c.Turns) == 0 {
				t.Fatalf("case %d has no turns", c.ID)
			}
			for _, id := range c.Relevant {
				if m := byID[id]; m == nil || m.UserID != c.UserID {
					t.Fatalf("case %d of user %d labels memory %d of another user or none", c.ID, c.UserID, id)
				}
			}
		}
		// Whatever decodes must also score without panicking.
		Evaluate(Run(Lexical{}, mems, cases, 3), cases)
	})
}
