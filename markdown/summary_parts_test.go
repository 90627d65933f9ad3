package markdown

import (
	"reflect"
	"strings"
	"testing"
)

// TestPartKeyCoversEntry: partKey writes every field of Entry, so two
// entries that differ anywhere never share a cached summary part (a field
// added to Entry must be added to partKey).
func TestPartKeyCoversEntry(t *testing.T) {
	if n := reflect.TypeOf(Entry{}).NumField(); n != entryFields {
		t.Fatalf("Entry has %d fields, partKey writes %d: add the new ones to partKey and entryFields", n, entryFields)
	}
	base := Entry{ID: "m-1", Type: "fact", Title: "t", Description: "d", Content: "c", Tags: []string{"a"},
		Terms: []string{"x"}, Importance: 1, Status: StatusConflict, ConflictGroup: "g"}
	key := func(e Entry) string { return string(partKey(nil, e)) }
	want := key(base)
	v := reflect.ValueOf(&base).Elem()
	for i := 0; i < v.NumField(); i++ {
		e := base
		f := reflect.ValueOf(&e).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "'")
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a", ""}))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
		if key(e) == want {
			t.Errorf("field %s changed, got the same key %q", v.Type().Field(i).Name, want)
		}
	}
	// Length prefixes keep a boundary from moving between fields.
	a, b := base, base
	a.Title, a.Description = "ab", "c"
	b.Title, b.Description = "a", "bc"
	if key(a) == key(b) {
		t.Errorf("title/description %q/%q and %q/%q: got the same key", a.Title, a.Description, b.Title, b.Description)
	}
}

// TestSummaryPartsCached: a summary rendered with every part cached
// equals one rendered from an empty cache.
func TestSummaryPartsCached(t *testing.T) {
	var es []Entry
	for i := 0; i < 40; i++ {
		es = append(es, Entry{ID: "m-" + strings.Repeat("x", i%5) + string(rune('a'+i%26)), Type: []string{"fact", "rule", "fix"}[i%3],
			Title: "title " + strings.Repeat("w", i), Content: strings.Repeat("line\n", i%9) + "end",
			Importance: i % 4, Status: []string{StatusActive, StatusConflict, StatusForgotten}[i%3]})
	}
	in := SummaryInput{ScopeKey: "ws-1", Cwd: "/w", Entries: es, Omitted: 3}
	parts.Lock()
	parts.m = nil
	parts.Unlock()
	cold, kept := RenderSummaryKept(in)
	warm, kept2 := RenderSummaryKept(in)
	if string(cold) != string(warm) || kept != kept2 {
		t.Fatalf("got a different summary from cached parts (kept %d, %d):\n%s\nwant\n%s", kept2, kept, warm, cold)
	}
}
