package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"dshmem/events"
)

// ScrubbedText is what `dshmem scrub` turns the text of a forgotten
// entry into, in every event that held it: a fixed marker, so a scrubbed
// field still decodes (and a content is never empty, which would change
// what a fold makes of it), and history shows what happened. Part of the
// on-disk format; do not change.
const ScrubbedText = "[scrubbed]"

// Text fields: the strings of an event's data that a person or a model
// wrote, as opposed to names, ids, kinds and numbers. A scrub rewrites
// these and nothing else, so no op name, target id, entry type or
// provenance can change under it.
//
// A path is a key of the data object; "key[]" is each element of an
// array; "key[].sub" a field of each object of an array; "key*" every
// string anywhere inside the value (a tool call's arguments).
var textFields = map[string][]string{
	events.TypeSessionEnd:        {"summary"},
	events.TypeUserMessage:       {"text"},
	events.TypeAssistantMessage:  {"text"},
	events.TypeToolCall:          {"args*"},
	events.TypeToolResult:        {"text", "error"},
	events.TypeCompactionSummary: {"text"},
	events.TypeTurnEnd:           {"error"},
	events.TypeTaskEnd:           {"request", "result"},
	events.TypeMemoryRemember:    {"content", "title", "description", "terms", "legacy.heading"},
	events.TypeMemoryForget:      {"reason"},
	events.TypeMemoryOps: {"ops[].title", "ops[].description", "ops[].content", "ops[].oldQuote",
		"ops[].newQuote", "ops[].reason", "ops[].terms[]"},
	events.TypeFileEdit: {"content"},
}

// TextField names one text field as RewriteText passes it: its path
// ("content", "ops[].oldQuote", "args*") and, inside an array of ops,
// the op's index (-1 elsewhere).
type TextField struct {
	Path string
	Op   int
}

// RewriteText returns data with fn applied to every text field of an
// event of type typ (see textFields), and whether anything changed.
// Everything else of the object — its keys, their order, fields this
// build does not know, the bytes of every value fn leaves alone — is
// kept as it is, so data that fn does not change comes back byte for
// byte. Data that is not a JSON object is an error.
func RewriteText(typ string, data json.RawMessage, fn func(f TextField, s string) string) (json.RawMessage, bool, error) {
	paths := textFields[typ]
	if len(paths) == 0 || len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return data, false, nil
	}
	out, changed, err := rewriteObject(data, paths, -1, fn, "")
	if err != nil {
		return data, false, fmt.Errorf("rewrite %s text: %w", typ, err)
	}
	if !changed {
		return data, false, nil
	}
	return out, true, nil
}

// member is one key and raw value of an object, in order.
type member struct {
	key   string
	value json.RawMessage
}

func splitObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("data is not a JSON object")
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return ms, nil
}

// rewriteObject applies fn to the members of an object named by paths
// (relative to it; prefix is the path of the object itself).
func rewriteObject(data []byte, paths []string, op int, fn func(TextField, string) string, prefix string) ([]byte, bool, error) {
	ms, err := splitObject(data)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for i := range ms {
		for _, p := range paths {
			v, ch, err := rewriteMember(ms[i], p, op, fn, prefix)
			if err != nil {
				return nil, false, err
			}
			if ch {
				ms[i].value, changed = v, true
			}
		}
	}
	if !changed {
		return data, false, nil
	}
	return joinObject(ms), true, nil
}

// joinObject writes the members back as a JSON object, in their order.
func joinObject(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(marshalString(m.key))
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// rewriteMember applies path p to member m, when p names it.
func rewriteMember(m member, p string, op int, fn func(TextField, string) string, prefix string) (json.RawMessage, bool, error) {
	head, rest, nested := cutPath(p)
	key, kind := head, ""
	switch {
	case len(head) > 2 && head[len(head)-2:] == "[]":
		key, kind = head[:len(head)-2], "array"
	case len(head) > 1 && head[len(head)-1] == '*':
		key, kind = head[:len(head)-1], "any"
	}
	if m.key != key {
		return nil, false, nil
	}
	full := prefix + p
	switch {
	case kind == "any":
		return rewriteAny(m.value, func(s string) string { return fn(TextField{Path: full, Op: op}, s) })
	case kind == "array" && nested:
		var elems []json.RawMessage
		if json.Unmarshal(m.value, &elems) != nil {
			return nil, false, nil // not an array: nothing of ours to rewrite
		}
		changed := false
		for i, e := range elems {
			if len(bytes.TrimSpace(e)) == 0 || bytes.TrimSpace(e)[0] != '{' {
				continue
			}
			out, ch, err := rewriteObject(e, []string{rest}, i, fn, prefix+head+".")
			if err != nil {
				return nil, false, err
			}
			if ch {
				elems[i], changed = out, true
			}
		}
		if !changed {
			return nil, false, nil
		}
		return joinArray(elems), true, nil
	case kind == "array":
		var elems []json.RawMessage
		if json.Unmarshal(m.value, &elems) != nil {
			return nil, false, nil
		}
		changed := false
		for i, e := range elems {
			out, ch := rewriteString(e, func(s string) string { return fn(TextField{Path: full, Op: op}, s) })
			if ch {
				elems[i], changed = out, true
			}
		}
		if !changed {
			return nil, false, nil
		}
		return joinArray(elems), true, nil
	case nested:
		if len(bytes.TrimSpace(m.value)) == 0 || bytes.TrimSpace(m.value)[0] != '{' {
			return nil, false, nil
		}
		return rewriteObject(m.value, []string{rest}, op, fn, prefix+head+".")
	}
	out, ch := rewriteString(m.value, func(s string) string { return fn(TextField{Path: full, Op: op}, s) })
	return out, ch, nil
}

// cutPath splits "a.b.c" into "a" and "b.c".
func cutPath(p string) (head, rest string, nested bool) {
	return strings.Cut(p, ".")
}

// rewriteString applies fn to a JSON string value; anything else is
// left alone.
func rewriteString(v json.RawMessage, fn func(string) string) (json.RawMessage, bool) {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return v, false
	}
	n := fn(s)
	if n == s {
		return v, false
	}
	return marshalString(n), true
}

// rewriteAny applies fn to every string inside a JSON value (object
// keys excepted).
func rewriteAny(v json.RawMessage, fn func(string) string) (json.RawMessage, bool, error) {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return v, false, nil
	}
	switch t[0] {
	case '"':
		out, ch := rewriteString(v, fn)
		return out, ch, nil
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(t, &elems); err != nil {
			return nil, false, err
		}
		changed := false
		for i := range elems {
			out, ch, err := rewriteAny(elems[i], fn)
			if err != nil {
				return nil, false, err
			}
			if ch {
				elems[i], changed = out, true
			}
		}
		if !changed {
			return v, false, nil
		}
		return joinArray(elems), true, nil
	case '{':
		ms, err := splitObject(t)
		if err != nil {
			return nil, false, err
		}
		changed := false
		for i := range ms {
			out, ch, err := rewriteAny(ms[i].value, fn)
			if err != nil {
				return nil, false, err
			}
			if ch {
				ms[i].value, changed = out, true
			}
		}
		if !changed {
			return v, false, nil
		}
		return joinObject(ms), true, nil
	}
	return v, false, nil
}

func joinArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// marshalString encodes s as JSON without HTML escaping, as the log's
// lines are written.
func marshalString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
