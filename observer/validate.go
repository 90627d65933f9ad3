package observer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/markdown"
)

// Size caps of intake (ARCHITECTURE §8: every input has a size cap).
const (
	// MaxEventBytes caps one input line, the envelope as the producer
	// sent it, before redaction.
	MaxEventBytes = 256 << 10
	// MaxIngestBytes caps the bytes of one ingest call, blank lines and
	// line ends included.
	MaxIngestBytes = 8 << 20
	// maxIDBytes caps an event id; ids are index keys, not payload.
	maxIDBytes = 512
)

// ErrIngestTooLarge is returned by SplitLines when one call carries more
// than MaxIngestBytes. No line of such a call has been handed on.
var ErrIngestTooLarge = errors.New("ingest larger than 8 MiB")

// LineError says which input line was rejected, which field is at fault
// ("" for the line as a whole, "data.text" for a field inside data) and
// what is wrong. It rejects that line only; the lines around it stand.
type LineError struct {
	Line  int
	Field string
	Msg   string
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d: field %q: %s", e.Line, e.Field, e.Msg)
}

// SplitLines reads one ingest call of JSONL and calls fn for every
// non-blank line with its 1-based line number (blank lines count). The
// last line needs no newline; "\r\n" line ends and a leading UTF-8 byte
// order mark are accepted.
//
// The whole call is read before fn sees any line: a call larger than
// MaxIngestBytes is refused as a whole with ErrIngestTooLarge, so a caller
// never acts on a prefix of an input it then has to refuse. A line longer
// than MaxEventBytes is handed to fn cut to MaxEventBytes+1 bytes, which
// Validate rejects with a LineError naming the limit; the lines after it
// are handed on as usual.
//
// An error from fn stops the loop and is returned as is.
func SplitLines(r io.Reader, fn func(lineNo int, line []byte) error) error {
	buf, err := io.ReadAll(io.LimitReader(r, MaxIngestBytes+1))
	if err != nil {
		return fmt.Errorf("read ingest: %w", err)
	}
	if len(buf) > MaxIngestBytes {
		return fmt.Errorf("read ingest: %w (%d bytes per call); send fewer events per call", ErrIngestTooLarge, MaxIngestBytes)
	}
	buf = bytes.TrimPrefix(buf, []byte("\uFEFF"))
	for lineNo := 1; len(buf) > 0; lineNo++ {
		line, rest, _ := bytes.Cut(buf, []byte{'\n'})
		buf = rest
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if blank(line) {
			continue
		}
		if len(line) > MaxEventBytes {
			line = line[:MaxEventBytes+1]
		}
		if err := fn(lineNo, line); err != nil {
			return err
		}
	}
	return nil
}

// blank reports whether line holds nothing but JSON whitespace.
func blank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// envelopeFields are the top-level fields an input line may carry, in the
// order Validate checks them.
var envelopeFields = []string{"v", "seq", "id", "type", "time", "session", "cwd", "stream", "data"}

// Validate parses and checks one input line (ARCHITECTURE §3) and returns
// the envelope to be redacted and appended. Its rules:
//
//   - the line is at most MaxEventBytes, valid UTF-8, one JSON object with
//     no field twice and no field outside envelopeFields;
//   - v is absent, null or 1; seq is absent, null or 0 (0 is what
//     events.Marshal writes for an envelope without one): any other seq is
//     refused, because seq is assigned by dshmem;
//   - id is a non-blank string of at most 512 bytes; type is a known event
//     type; time parses as RFC 3339 (time.RFC3339Nano), lies in the
//     years 1970–2199 (MinEventTime, MaxEventTime: times in nanoseconds
//     overflow outside 1678–2262, and restore --at compares them) and is
//     kept as sent;
//   - session, cwd and stream are strings when present; cwd is absolute
//     (POSIX or a Windows drive path); stream is a stream name and, when
//     cwd is present, the key of cwd or of one of its parent directories
//     (intake checks it against the scope the cwd resolves to);
//   - data, when present and not null, is a JSON object; it is returned
//     compacted, its key order and unknown fields kept; each type's
//     required fields are checked (dataRules), and a memory/remember whose
//     content is nothing but a credential is refused.
//
// A null optional field counts as absent. The returned envelope has V 1,
// Seq 0 and Stream as sent (often ""): ResolveStream picks the stream.
// With an error, it holds the fields checked before the fault (the id,
// once that passed), for the caller's report only; never append it.
func Validate(line []byte, lineNo int) (events.Envelope, *LineError) {
	e := events.Envelope{V: events.CurrentVersion}
	fail := func(field, format string, args ...any) (events.Envelope, *LineError) {
		return e, &LineError{Line: lineNo, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if len(line) > MaxEventBytes {
		return fail("", "event is larger than the %d KiB limit (%d bytes); shorten it or split it into several events", MaxEventBytes>>10, MaxEventBytes)
	}
	if !utf8.Valid(line) {
		return fail("", "not valid UTF-8")
	}
	fields, lerr := splitObject(line, lineNo)
	if lerr != nil {
		return e, lerr
	}

	if raw, ok := present(fields, "v"); ok {
		v, err := strconv.ParseInt(string(raw), 10, 64)
		switch {
		case err != nil:
			return fail("v", "must be the integer %d or absent, got %s", events.CurrentVersion, clip(raw))
		case v > events.CurrentVersion:
			return fail("v", "version %d is newer than this build understands (%d); upgrade dshmem", v, events.CurrentVersion)
		case v != events.CurrentVersion:
			return fail("v", "unsupported version %d; send %d or omit v", v, events.CurrentVersion)
		}
	}
	if raw, ok := present(fields, "seq"); ok && string(raw) != "0" {
		return fail("seq", "assigned by dshmem; remove it")
	}

	id, err := requiredString(fields, "id")
	switch {
	case err != nil:
		return fail("id", "%v", err)
	case strings.TrimSpace(id) == "":
		return fail("id", "must not be empty; send a stable idempotency key, e.g. host:session:turn")
	case len(id) > maxIDBytes:
		return fail("id", "is %d bytes; the limit is %d", len(id), maxIDBytes)
	}
	e.ID = id
	if e.Type, err = requiredString(fields, "type"); err != nil {
		return fail("type", "%v", err)
	}
	if !events.KnownType(e.Type) {
		return fail("type", "unknown event type %s; known types: %s", QuoteClip(e.Type), strings.Join(events.Types, ", "))
	}
	if e.Time, err = requiredString(fields, "time"); err != nil {
		return fail("time", "%v", err)
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return fail("time", "not RFC 3339: %s (want e.g. 2026-08-18T10:00:00Z)", QuoteClip(e.Time))
	}
	if t.Before(MinEventTime) || !t.Before(MaxEventTime) {
		return fail("time", "%s is outside the years %d–%d an event may carry: send the event's own time (e.g. 2026-08-18T10:00:00Z)",
			QuoteClip(e.Time), MinEventTime.Year(), MaxEventTime.Year()-1)
	}
	if e.Session, err = optionalString(fields, "session"); err != nil {
		return fail("session", "%v", err)
	}
	if e.Cwd, err = optionalString(fields, "cwd"); err != nil {
		return fail("cwd", "%v", err)
	}
	if e.Cwd != "" && !isAbsCwd(NormalizeCwd(e.Cwd)) {
		return fail("cwd", "not an absolute path: %s (send the session's working directory, e.g. /home/u/proj or C:\\Users\\u\\proj)", QuoteClip(e.Cwd))
	}
	if e.Stream, err = optionalString(fields, "stream"); err != nil {
		return fail("stream", "%v", err)
	}
	if e.Stream != "" {
		if !ValidStream(e.Stream) {
			return fail("stream", "not a stream name: %s (want \"global\" or ws-<20 hex digits>); usually omit it, dshmem derives it from cwd", QuoteClip(e.Stream))
		}
		// Which scope the cwd belongs to is the engine's to decide
		// (Resolver): here the stream must at least be the key of the
		// cwd or of one of its ancestors.
		if e.Cwd != "" && !streamOfAncestor(e.Stream, NormalizeCwd(e.Cwd)) {
			return fail("stream", "is %s but cwd %s resolves to %s or the scope of one of its parent directories; omit stream and dshmem derives it",
				QuoteClip(e.Stream), QuoteClip(e.Cwd), StreamForCwd(e.Cwd))
		}
	}

	if raw, ok := present(fields, "data"); ok {
		if raw[0] != '{' {
			return fail("data", "must be a JSON object, got %s", jsonKind(raw))
		}
		if compact(raw) {
			e.Data = bytes.Clone(raw) // raw is the caller's line
		} else {
			var buf bytes.Buffer
			if err := json.Compact(&buf, raw); err != nil {
				return fail("data", "not valid JSON: %v", err) // splitObject has checked it; kept for safety
			}
			e.Data = buf.Bytes()
		}
	}
	if lerr := checkData(&e, lineNo); lerr != nil {
		return e, lerr
	}
	return e, nil
}

// splitObject decodes one JSON object into its top-level fields, refusing
// anything else: other JSON values, trailing data, a field given twice
// (encoding/json would silently keep the last one) and unknown fields (a
// misspelt "Time" would otherwise vanish).
func splitObject(line []byte, lineNo int) (map[string]json.RawMessage, *LineError) {
	if json.Valid(line) && line[skipSpace(line, 0)] == '{' {
		// The common case, without the decoder's tokens (jsonscan.go).
		fields := make(map[string]json.RawMessage, len(envelopeFields))
		var lerr *LineError
		eachMember(line, func(key string, val []byte) bool {
			lerr = checkField(fields, key, lineNo)
			fields[key] = val
			return lerr == nil
		})
		if lerr != nil {
			return nil, lerr
		}
		return fields, nil
	}
	return splitObjectTokens(line, lineNo)
}

// checkField refuses a field of an envelope given twice or unknown.
func checkField(fields map[string]json.RawMessage, key string, lineNo int) *LineError {
	if _, dup := fields[key]; dup {
		return &LineError{Line: lineNo, Field: key, Msg: "appears twice"}
	}
	if !known(key) {
		return &LineError{Line: lineNo, Field: clipped(key), Msg: "unknown field; an envelope has " + strings.Join(envelopeFields, ", ")}
	}
	return nil
}

// splitObjectTokens is splitObject through json.Decoder's tokens: for a
// line that is not a valid JSON object, whose error it names.
func splitObjectTokens(line []byte, lineNo int) (map[string]json.RawMessage, *LineError) {
	fail := func(field, format string, args ...any) (map[string]json.RawMessage, *LineError) {
		return nil, &LineError{Line: lineNo, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	notJSON := func(err error) (map[string]json.RawMessage, *LineError) {
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail("", "not valid JSON: the line ends inside the object; put each envelope on one line")
		}
		return fail("", "not valid JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	tok, err := dec.Token()
	switch {
	case err == io.EOF:
		return fail("", "empty line")
	case err != nil:
		return notJSON(err)
	case tok != json.Delim('{'):
		return fail("", "not a JSON object; each line is one event envelope {\"id\":…,\"type\":…,\"time\":…}")
	}
	fields := make(map[string]json.RawMessage, len(envelopeFields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return notJSON(err)
		}
		key := tok.(string) // inside an object the decoder yields string keys
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return notJSON(err)
		}
		if lerr := checkField(fields, key, lineNo); lerr != nil {
			return nil, lerr
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("", "trailing data after the JSON object; put one event on each line")
	}
	return fields, nil
}

func known(field string) bool {
	for _, f := range envelopeFields {
		if f == field {
			return true
		}
	}
	return false
}

// present returns the raw value of a field that is there and not null.
func present(fields map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

func requiredString(fields map[string]json.RawMessage, name string) (string, error) {
	raw, ok := present(fields, name)
	if !ok {
		return "", errors.New("missing")
	}
	return decodeString(raw)
}

func optionalString(fields map[string]json.RawMessage, name string) (string, error) {
	raw, ok := present(fields, name)
	if !ok {
		return "", nil
	}
	return decodeString(raw)
}

func decodeString(raw json.RawMessage) (string, error) {
	if raw[0] != '"' {
		return "", fmt.Errorf("must be a string, got %s", jsonKind(raw))
	}
	// raw is a value of a line that splitObject found valid JSON, and
	// valid UTF-8.
	return validString(raw), nil
}

// jsonKind names the JSON type of a syntactically valid raw value.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// clip quotes at most 64 bytes of a raw value for an error message.
func clip(raw []byte) string { return QuoteClip(string(raw)) }

// QuoteClip quotes s for an error message, cut so that a huge bad value
// does not make a huge error.
func QuoteClip(s string) string {
	if c := clipped(s); c != s {
		return strconv.Quote(strings.TrimSuffix(c, "…")) + "…"
	}
	return strconv.Quote(s)
}

// clipped cuts s after 64 bytes, at a rune boundary, marking the cut "…".
func clipped(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return markdown.CutUTF8(s, max) + "…"
}

// shape is what a required data field must hold.
type shape int

const (
	anyString  shape = iota // a string, possibly empty
	nonBlank                // a string with something other than white space
	arrayOfAny              // a JSON array
)

func (s shape) String() string {
	switch s {
	case nonBlank:
		return "a non-empty string"
	case arrayOfAny:
		return "an array"
	}
	return "a string"
}

type dataField struct {
	name string
	want shape
}

// dataRules lists, per event type, the data fields it cannot do without
// (ARCHITECTURE §3). Fields not listed are optional, and unknown fields are
// kept, so a producer can send more than this build reads.
var dataRules = map[string][]dataField{
	events.TypeUserMessage:       {{"text", anyString}},
	events.TypeAssistantMessage:  {{"text", anyString}},
	events.TypeToolCall:          {{"name", nonBlank}},
	events.TypeToolResult:        {{"name", nonBlank}},
	events.TypeCompactionSummary: {{"compactionId", nonBlank}, {"text", anyString}},
	events.TypeMemoryRemember:    {{"content", nonBlank}},
	events.TypeMemoryForget:      {{"entryId", nonBlank}},
	events.TypeFileEdit:          {{"path", nonBlank}, {"content", anyString}},
	events.TypeMemoryOps:         {{"ops", arrayOfAny}},
}

// MinEventTime and MaxEventTime bound an event's time: [1970, 2200).
var (
	MinEventTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxEventTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// checkData applies dataRules and the value rules of session/start and
// memory/remember to e.Data, which is a JSON object or absent.
func checkData(e *events.Envelope, lineNo int) *LineError {
	fail := func(field, format string, args ...any) *LineError {
		return &LineError{Line: lineNo, Field: "data." + field, Msg: fmt.Sprintf(format, args...)}
	}
	var obj map[string]json.RawMessage
	if len(e.Data) > 0 {
		// Valid and compact (Validate); a key given twice keeps its
		// last value, as json.Unmarshal would.
		obj = map[string]json.RawMessage{}
		eachMember(e.Data, func(key string, val []byte) bool {
			obj[key] = val
			return true
		})
	}
	for _, f := range dataRules[e.Type] {
		raw, ok := present(obj, f.name)
		if !ok {
			return fail(f.name, "missing; a %s event needs data.%s, %s", e.Type, f.name, f.want)
		}
		if f.want == arrayOfAny {
			if raw[0] != '[' {
				return fail(f.name, "must be an array, got %s", jsonKind(raw))
			}
			continue
		}
		s, err := decodeString(raw)
		if err != nil {
			return fail(f.name, "%v", err)
		}
		if f.want == nonBlank && strings.TrimSpace(s) == "" {
			return fail(f.name, "must not be empty")
		}
	}
	switch e.Type {
	case events.TypeSessionStart:
		if raw, ok := present(obj, "origin"); ok {
			s, err := decodeString(raw)
			if err != nil {
				return fail("origin", "%v", err)
			}
			if s != payload.OriginTop && s != payload.OriginSubagent {
				return fail("origin", "must be %q or %q, got %s", payload.OriginTop, payload.OriginSubagent, QuoteClip(s))
			}
		}
	case events.TypeMemoryRemember:
		content := validString(obj["content"]) // a string: checked above
		if OnlySecret(content) {
			return fail("content", "is nothing but a credential; dshmem does not store secrets as memories (remember where the secret is kept instead)")
		}
	case events.TypeFileEdit:
		p := validString(obj["path"]) // a string: checked above
		if !rootRelative(p) {
			return fail("path", "%s is not a path inside the memory root: give it relative to the root, with / and no .. (e.g. global.md or scopes/ws-…/memory_summary.md)", QuoteClip(p))
		}
	}
	return nil
}

// rootRelative reports whether p names a file inside the root: relative,
// slash-separated, clean (no ., .., empty or backslash parts), no drive.
func rootRelative(p string) bool {
	if p == "" || strings.ContainsAny(p, "\\\x00:") || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	return p != ".." && !strings.HasPrefix(p, "../")
}
