package distill

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"dshmem/events/payload"
)

// MaxAnswerBytes caps an answer ParseResult reads.
const MaxAnswerBytes = 4 << 20

// ParseResult reads a distiller's answer. It accepts
//
//   - the ops schema: {"version":1,"operations":[…]} (a missing version
//     is 1, a higher one is refused);
//   - the legacy {"memories":[…]} and a bare array […], whose items are
//     read as adds (an item that names its own "op" keeps it; an item
//     that is a plain string is an add with that content);
//
// optionally inside a Markdown code fence (```json … ```). Within an item
// it tolerates what models write: tags/terms/evidenceEventIds as one
// string ("a, b"), numbers as strings, and an op name in another case.
// Anything else is ErrMalformedAnswer, wrapped with what is wrong.
// ParseResult checks shape only; Validate checks meaning.
func ParseResult(b []byte) (Result, error) {
	if len(b) > MaxAnswerBytes {
		return Result{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformedAnswer, len(b), MaxAnswerBytes)
	}
	body := bytes.TrimSpace(stripFence(bytes.TrimSpace(b)))
	if len(body) == 0 {
		return Result{}, fmt.Errorf("%w: empty", ErrMalformedAnswer)
	}
	var items []json.RawMessage
	version := ResultVersion
	switch body[0] {
	case '[':
		if err := json.Unmarshal(body, &items); err != nil {
			return Result{}, malformed(body, err)
		}
	case '{':
		var top struct {
			Version    *json.Number       `json:"version"`
			Operations *[]json.RawMessage `json:"operations"`
			Memories   *[]json.RawMessage `json:"memories"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&top); err != nil {
			return Result{}, malformed(body, err)
		}
		if dec.More() {
			return Result{}, fmt.Errorf("%w: text after the JSON object", ErrMalformedAnswer)
		}
		switch {
		case top.Operations != nil:
			items = *top.Operations
		case top.Memories != nil:
			items = *top.Memories
		default:
			return Result{}, fmt.Errorf("%w: object has neither \"operations\" nor \"memories\"", ErrMalformedAnswer)
		}
		if top.Version != nil {
			v, err := top.Version.Int64()
			if err != nil || v < 0 {
				return Result{}, fmt.Errorf("%w: version %s is not a whole number", ErrMalformedAnswer, *top.Version)
			}
			if v > ResultVersion {
				return Result{}, fmt.Errorf("%w: version %d is newer than %d, the one this dshmem reads", ErrMalformedAnswer, v, ResultVersion)
			}
		}
	default:
		return Result{}, malformed(body, fmt.Errorf("not a JSON object or array"))
	}
	res := Result{Version: version, Operations: make([]Op, 0, len(items))}
	for i, raw := range items {
		op, err := parseItem(raw)
		if err != nil {
			return Result{}, fmt.Errorf("%w: operation %d: %v", ErrMalformedAnswer, i, err)
		}
		res.Operations = append(res.Operations, op)
	}
	return res, nil
}

// stripFence returns the inside of a Markdown code fence around b, or b.
func stripFence(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("```")) {
		return b
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return b
	}
	inner := b[nl+1:]
	if end := bytes.LastIndex(inner, []byte("```")); end >= 0 {
		inner = inner[:end]
	}
	return inner
}

func malformed(body []byte, err error) error {
	head := body
	if len(head) > 80 {
		head = head[:80]
	}
	return fmt.Errorf("%w: %v (answer begins %q)", ErrMalformedAnswer, err, head)
}

// rawOp is an item as models write it; flex fields take a string or a list.
type rawOp struct {
	Op               string      `json:"op"`
	TargetID         flexString  `json:"targetId"`
	OldQuote         string      `json:"oldQuote"`
	NewQuote         string      `json:"newQuote"`
	EvidenceEventIDs flexStrings `json:"evidenceEventIds"`
	Type             string      `json:"type"`
	Title            string      `json:"title"`
	Description      string      `json:"description"`
	Content          string      `json:"content"`
	Tags             flexStrings `json:"tags"`
	Terms            flexStrings `json:"terms"`
	Importance       flexNumber  `json:"importance"`
	Confidence       flexNumber  `json:"confidence"`
	Reason           string      `json:"reason"`
	Provenance       string      `json:"provenance"`
}

func parseItem(raw json.RawMessage) (Op, error) {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return Op{}, err
		}
		return Op{Op: payload.OpAdd, Content: s}, nil
	}
	if len(t) == 0 || t[0] != '{' {
		return Op{}, fmt.Errorf("not an object or a string")
	}
	var r rawOp
	if err := json.Unmarshal(t, &r); err != nil {
		return Op{}, err
	}
	op := strings.ToLower(strings.TrimSpace(r.Op))
	if op == "" {
		op = payload.OpAdd
	}
	return Op{
		Op: op, TargetID: string(r.TargetID), OldQuote: r.OldQuote, NewQuote: r.NewQuote,
		EvidenceEventIDs: r.EvidenceEventIDs, Type: strings.ToLower(strings.TrimSpace(r.Type)),
		Title: r.Title, Description: optional(r.Description), Content: r.Content,
		Tags: nilIfEmpty(r.Tags), Terms: nilIfEmpty(r.Terms), Importance: nonZero(int(math.Max(-100, math.Min(100, float64(r.Importance))))),
		Confidence: nonZero(float64(r.Confidence)),
		Reason:     r.Reason, Provenance: r.Provenance,
	}, nil
}

// unquote returns the string b holds when b is a JSON string; for null and
// any other value ok is false and the caller reads b its own way. (The
// decoder has checked b before an UnmarshalJSON sees it.)
func unquote(b []byte) (s string, ok bool) {
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
		return "", false
	}
	return s, true
}

// flexString is a string, or a number written for an id.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if s, ok := unquote(b); ok {
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string, got %s", truncBytes(b))
	}
	*f = flexString(n.String())
	return nil
}

// flexStrings is a list of strings (numbers allowed), or one string
// holding a comma-separated list.
type flexStrings []string

func (f *flexStrings) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if s, ok := unquote(b); ok {
		var out []string
		for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == '、' }) {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*f = out
		return nil
	}
	var items []flexString
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("want a list of strings, got %s", truncBytes(b))
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, string(it))
	}
	*f = out
	return nil
}

// flexNumber is a number, or a string holding one.
type flexNumber float64

func (f *flexNumber) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	s := string(b)
	if q, ok := unquote(b); ok {
		s = strings.TrimSpace(q)
		if s == "" {
			return nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a number, got %s", truncBytes(b))
	}
	*f = flexNumber(v)
	return nil
}

func truncBytes(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
