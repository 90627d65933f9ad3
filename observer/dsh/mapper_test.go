package dsh

import (
	"encoding/json"
	"testing"
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
			if got := string(toolArgs(json.RawMessage(c.in))); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
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
	if got := millis(1786000000123).rfc3339(); got != "2026-08-06T07:06:40.123Z" {
		t.Errorf("rfc3339: got %s", got)
	}
}
