package dsh

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolArgs: arguments the host writes as a JSON string holding JSON
// become that JSON; a string that does not parse stays a string; a value
// that is already JSON is kept; absent arguments are null.
func TestToolArgs(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"StringOfObject", `"{\"path\":\"a.go\"}"`, `{"path":"a.go"}`},
		{"StringOfObjectPadded", `"  {\"n\":1} "`, `{"n":1}`},
		{"StringNotJSON", `"ls -la"`, `"ls -la"`},
		{"EmptyString", `""`, `""`},
		{"Object", `{"path":"a.go"}`, `{"path":"a.go"}`},
		{"Absent", ``, `null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := string(toolArgs(json.RawMessage(c.in)))
			assert.Equal(t, c.want, got, "got %s, want %s", got, c.want)
		})
	}
}

// TestMillis: the host writes integers; a float is truncated; anything
// else (or a float beyond 2^53) is refused; null leaves the value alone.
func TestMillis(t *testing.T) {
	for _, c := range []struct {
		in   string
		want millis
		ok   bool
	}{
		{"1786000000123", 1786000000123, true},
		{"1786000000123.9", 1786000000123, true},
		{"-5", -5, true},
		{"null", 7, true},
		{`"1786000000123"`, 0, false},
		{"1e300", 0, false},
	} {
		m := millis(7)
		err := m.UnmarshalJSON([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && m != c.want) {
			t.Errorf("millis %s: got %d, %v; want %d, ok %v", c.in, m, err, c.want, c.ok)
		}
	}
	got := millis(1786000000123).rfc3339()
	assert.EqualValues(t, "2026-08-06T07:06:40.123Z", got, "rfc3339: got %s", got)
}

// TestInjectedMarks: in a session whose memory-like text was mostly
// injected (testdata/dsh-injected), only what the user typed and what
// ordinary tools returned is unmarked; runtime-context snapshots, a
// plugin's recall and the results of dshmem's own tools are injected.
func TestInjectedMarks(t *testing.T) {
	s, err := ReadFile("../../testdata/dsh-injected/session.jsonl")
	require.NoError(t, err)
	var got []string
	for _, ev := range s.Events {
		p, err := payload.Decode(ev.Type, ev.Data)
		require.NoError(t, err)
		label, injected := ev.Type, false
		switch d := p.(type) {
		case payload.UserMessage:
			injected = d.Injected
		case payload.ToolResult:
			if d.Name != "" {
				label += " " + d.Name
			}
			injected = d.Injected
		default:
			continue
		}
		if injected {
			label += " injected"
		}
		got = append(got, label)
	}
	want := []string{
		"user/message",                       // typed: "Remember that releases are tagged from the main branch"
		"user/message injected",              // the runtime-context snapshot
		"tool/result memory_search injected", // dshmem's tool echoing an entry
		"tool/result bash",                   // an ordinary tool
		"user/message injected",              // a plugin's recall
		"user/message",                       // typed: "Thanks."
		"user/message injected",              // the next turn's snapshot
	}
	require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	for _, name := range []string{"memory_search", "memory_remember", "memory_forget"} {
		assert.True(t, MemoryTools[name], "MemoryTools lacks %s", name)
	}
}

// TestMappedDataIsPayload: the data of every envelope mapped from the
// fixtures is events/payload's wire format: it decodes, and encoding it
// again gives the very bytes the mapper wrote.
func TestMappedDataIsPayload(t *testing.T) {
	paths, err := FindSessions(fixtureDir)
	require.NoError(t, err, "fixtures: %v, %v", paths, err)
	require.NotEqualValues(t, 0, len(paths), "fixtures: %v, %v", paths, err)
	n := 0
	for _, path := range append(paths, "../../testdata/dsh-injected/session.jsonl") {
		s, err := ReadFile(path)
		require.NoError(t, err, "%s", path)
		for _, ev := range s.Events {
			p, err := payload.Decode(ev.Type, ev.Data)
			require.NoError(t, err, "%s %s", ev.ID, ev.Type)
			again, err := payload.Marshal(p)
			assert.False(t, err != nil || !bytes.Equal(again, ev.Data), "%s: got %s (%v), want %s", ev.ID, again, err, ev.Data)
			n++
		}
	}
	require.False(t, n < 100, "mapped %d envelopes; the fixtures hold more", n)
}
