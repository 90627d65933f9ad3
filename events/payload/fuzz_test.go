package payload_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"dshmem/events"
	"dshmem/events/payload"
)

// FuzzDecode feeds Decode the data of every event of testdata (v1.jsonl,
// older.jsonl, the golden segments' expected.jsonl) and mutations of it,
// under every type. Decode must not panic; a type outside the vocabulary
// is ErrUnknownType; whatever decodes encodes, and encoding is a fixed
// point: decoding what Marshal wrote gives the same payload, so a
// producer that re-encodes what it read writes it again unchanged.
func FuzzDecode(f *testing.F) {
	for _, rel := range []string{"payload/v1.jsonl", "payload/older.jsonl"} {
		for _, l := range readLines(f, rel) {
			f.Add(l.Type, []byte(l.Data))
		}
	}
	b, err := os.ReadFile(filepath.Join(testdata, "segments", "expected.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		e, err := events.Unmarshal(l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(e.Type, []byte(e.Data))
	}
	f.Add("memory/recall", []byte(`{}`))

	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		p, err := payload.Decode(typ, data)
		if !events.KnownType(typ) {
			if !errors.Is(err, payload.ErrUnknownType) {
				t.Fatalf("type %q: got %v, want ErrUnknownType", typ, err)
			}
			return
		}
		if p == nil || p.EventType() != typ {
			t.Fatalf("type %q: got payload %T", typ, p)
		}
		// A partial payload (err != nil) encodes too.
		once, merr := payload.Marshal(p)
		if merr != nil {
			t.Fatalf("Marshal(%+v): %v", p, merr)
		}
		if err != nil {
			return
		}
		if !json.Valid(once) {
			t.Fatalf("Marshal wrote invalid JSON %s", once)
		}
		p2, err := payload.Decode(typ, once)
		if err != nil {
			t.Fatalf("Decode(Marshal(Decode(%s))) = Decode(%s): %v", data, once, err)
		}
		twice, _ := payload.Marshal(p2)
		if !bytes.Equal(once, twice) {
			t.Fatalf("not a fixed point: %s\nonce  %s\ntwice %s", data, once, twice)
		}
	})
}
