package madial

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is one entry of a user's memory archive.
type Memory struct {
	ID      int    // global across users; the same id names the same event in zh and en
	UserID  int    // the user the memory belongs to
	Text    string // what a retriever indexes: the event sentence
	Time    string // YYYY-MM-DD
	Scene   string // category label, e.g. 活动类 / Activity
	Emotion string // e.g. 开心 / Happy
}

// Case is one dialogue evaluated at its first test turn.
type Case struct {
	ID       int      // the dialogue's line index (== its "id" in the zh file and the baselines)
	UserID   int      // candidates are this user's memories
	Query    string   // the dialogue up to its first test turn: Turns concatenated
	Turns    []string // dialogue lines before the first test turn, "<BOD>\n" first
	Relevant []int    // labelled relevant memory ids, in file order
}

// Load reads the memories and dialogues of one language from dir, the
// directory holding MADial-Bench-{zh,en}-{memory,dialogue}.json. English
// memory records carry no user-id; Load takes it from the Chinese memory
// file in the same directory (same id, same event). It checks that every
// labelled id names a memory of the dialogue's user.
func Load(dir, lang string) (memories []Memory, cases []Case, err error) {
	if lang != "zh" && lang != "en" {
		return nil, nil, fmt.Errorf("load %q: %w", lang, ErrLang)
	}
	memPath := filepath.Join(dir, "MADial-Bench-"+lang+"-memory.json")
	memories, err = readMemories(memPath)
	if err != nil {
		return nil, nil, err
	}
	if err := fillUsers(dir, lang, memPath, memories); err != nil {
		return nil, nil, err
	}
	byID := make(map[int]*Memory, len(memories))
	for i := range memories {
		byID[memories[i].ID] = &memories[i]
	}
	diaPath := filepath.Join(dir, "MADial-Bench-"+lang+"-dialogue.json")
	cases, err = readCases(diaPath, byID)
	if err != nil {
		return nil, nil, err
	}
	return memories, cases, nil
}

// memoryRecord is the value of a memory line {"<id>": memoryRecord}.
type memoryRecord struct {
	Time    string `json:"time"`
	Scene   string `json:"scene"`
	Emotion string `json:"emotion"`
	Event   string `json:"event"`
	UserID  *int   `json:"user-id"` // absent in the en file
	ID      string `json:"id"`      // absent in the en file; equals the key when present
}

// noUser marks a memory whose user-id is not known yet.
const noUser = -1

func readMemories(path string) ([]Memory, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	return decodeMemories(f, path)
}

// decodeMemories parses a memory file; name labels errors.
func decodeMemories(r io.Reader, name string) ([]Memory, error) {
	var out []Memory
	seen := make(map[int]bool)
	err := eachLine(r, name, func(line []byte) error {
		var rec map[string]memoryRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return err
		}
		if len(rec) != 1 {
			return fmt.Errorf("%w: memory line has %d keys, want 1", ErrShape, len(rec))
		}
		for key, r := range rec {
			id, err := strconv.Atoi(key)
			if err != nil {
				return fmt.Errorf("%w: memory key %q is not an integer", ErrShape, key)
			}
			if r.ID != "" && r.ID != key {
				return fmt.Errorf("%w: memory key %q holds id %q", ErrShape, key, r.ID)
			}
			if r.Event == "" {
				return fmt.Errorf("%w: memory %d has no event", ErrShape, id)
			}
			if seen[id] {
				return fmt.Errorf("memory %d: %w", id, ErrDuplicateID)
			}
			seen[id] = true
			m := Memory{ID: id, UserID: noUser, Text: r.Event, Time: r.Time, Scene: r.Scene, Emotion: r.Emotion}
			if r.UserID != nil {
				m.UserID = *r.UserID
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// fillUsers sets the user of memories that have none from the zh memory
// file. The en file is a translation of the zh one: same ids, same times,
// and on the published data the borrowed users agree with every en label
// and with upstream's split of the en file (first 76 lines Bart, user 1;
// the rest Lisa, user 2).
func fillUsers(dir, lang, path string, memories []Memory) error {
	missing := false
	for _, m := range memories {
		if m.UserID == noUser {
			missing = true
			break
		}
	}
	if !missing {
		return nil
	}
	if lang == "zh" {
		for _, m := range memories {
			if m.UserID == noUser {
				return fmt.Errorf("load %s: memory %d: %w", path, m.ID, ErrNoUser)
			}
		}
	}
	zhPath := filepath.Join(dir, "MADial-Bench-zh-memory.json")
	zh, err := readMemories(zhPath)
	if err != nil {
		return fmt.Errorf("borrow user ids for %s: %w", path, err)
	}
	users := make(map[int]int, len(zh))
	for _, m := range zh {
		users[m.ID] = m.UserID
	}
	for i, m := range memories {
		if m.UserID != noUser {
			continue
		}
		u, ok := users[m.ID]
		if !ok || u == noUser {
			return fmt.Errorf("load %s: memory %d not in %s: %w", path, m.ID, zhPath, ErrNoUser)
		}
		memories[i].UserID = u
	}
	return nil
}

// dialogueRecord is one line of a dialogue file.
type dialogueRecord struct {
	Dialogue []string `json:"dialogue"`
	TestTurn []int    `json:"test-turn"`
	Relevant []int    `json:"relevant-id"`
	UserID   *int     `json:"user-id"`
	ID       *int     `json:"id"` // absent in the en file
}

func readCases(path string, byID map[int]*Memory) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	return decodeCases(f, path, byID)
}

// decodeCases parses a dialogue file, checking labels against byID; name
// labels errors.
func decodeCases(r io.Reader, name string, byID map[int]*Memory) ([]Case, error) {
	var out []Case
	seen := make(map[int]bool)
	n := 0
	err := eachLine(r, name, func(line []byte) error {
		index := n
		n++
		var r dialogueRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.UserID == nil {
			return fmt.Errorf("%w: dialogue has no user-id", ErrShape)
		}
		id := index
		if r.ID != nil {
			id = *r.ID
		}
		if seen[id] {
			return fmt.Errorf("dialogue %d: %w", id, ErrDuplicateID)
		}
		seen[id] = true
		// Upstream embeds the dialogue before the FIRST test turn only;
		// later test turns are for the generation task.
		if len(r.TestTurn) == 0 || r.TestTurn[0] < 1 || r.TestTurn[0] > len(r.Dialogue) {
			return fmt.Errorf("dialogue %d: test turn %v of %d lines: %w", id, r.TestTurn, len(r.Dialogue), ErrTestTurn)
		}
		for _, rel := range r.Relevant {
			m, ok := byID[rel]
			switch {
			case !ok:
				return fmt.Errorf("dialogue %d: memory %d: %w", id, rel, ErrUnknownMemory)
			case m.UserID != *r.UserID:
				return fmt.Errorf("dialogue %d of user %d: memory %d of user %d: %w", id, *r.UserID, rel, m.UserID, ErrForeignMemory)
			}
		}
		turns := r.Dialogue[:r.TestTurn[0]]
		out = append(out, Case{
			ID:       id,
			UserID:   *r.UserID,
			Query:    strings.Join(turns, ""),
			Turns:    turns,
			Relevant: r.Relevant,
		})
		return nil
	})
	return out, err
}

// maxLine bounds one JSON line; the largest published line is ≈ 6 KB.
const maxLine = 16 << 20

// eachLine calls fn with every non-blank line read from r, wrapping fn's
// error in a *LineError for file name.
func eachLine(r io.Reader, name string, fn func(line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return &LineError{File: name, Line: lineNo, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}
