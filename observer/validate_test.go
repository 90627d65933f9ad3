package observer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validLines are accepted envelopes, one per event type that has data
// rules, plus the optional-field variants. They also seed FuzzValidate.
var validLines = []string{
	`{"id":"dsh:s1:1","type":"user/message","time":"2026-08-18T10:00:00.123Z","session":"s1","cwd":"/home/u/proj","data":{"text":"hi"}}`,
	`{"v":1,"id":"a1","type":"assistant/message","time":"2026-08-18T10:00:00+08:00","data":{"text":"","extra":[1,2]}}`,
	`{"id":"t1","type":"tool/call","time":"2026-08-18T10:00:00Z","data":{"name":"bash","args":{"cmd":"ls"}}}`,
	`{"id":"t2","type":"tool/result","time":"2026-08-18T10:00:00Z","data":{"name":"bash","ok":true,"text":"a\nb"}}`,
	`{"id":"c1","type":"compaction/summary","time":"2026-08-18T10:00:00Z","data":{"compactionId":"cmp-1","text":"summary"}}`,
	`{"id":"m1","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":"prefers tabs","tags":["style"]}}`,
	`{"id":"m2","type":"memory/forget","time":"2026-08-18T10:00:00Z","data":{"entryId":"e-1","reason":"stale"}}`,
	`{"id":"m3","type":"memory/ops","time":"2026-08-18T10:00:00Z","data":{"checkpoint":"ck","ops":[]}}`,
	`{"id":"f1","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"global.md","content":""}}`,
	`{"id":"s1","type":"session/start","time":"2026-08-18T10:00:00Z","cwd":"C:\\Users\\X\\proj","data":{"origin":"subagent","parent":"s0"}}`,
	`{"id":"s2","type":"session/end","time":"2026-08-18T10:00:00Z"}`,
	`{"id":"s3","type":"turn/end","time":"2026-08-18T10:00:00Z","data":null,"session":null,"seq":0,"stream":"global"}`,
	`  {"id":"s4","type":"task/end","time":"2026-08-18T10:00:00Z","data": { "taskId" : "x" } }  `,
}

func TestValidateOK(t *testing.T) {
	for i, line := range validLines {
		t.Run(fmt.Sprintf("OK%d", i), func(t *testing.T) {
			e, lerr := Validate([]byte(line), i+1)
			require.Nil(t, lerr, "Validate(%s) = %v, want no error", line, lerr)
			require.Equal(t, events.CurrentVersion, e.V, "got v %d seq %d, want v %d seq 0", e.V, e.Seq, events.CurrentVersion)
			require.EqualValues(t, 0, e.Seq, "got v %d seq %d, want v %d seq 0", e.V, e.Seq, events.CurrentVersion)
			require.False(t, len(e.Data) > 0 && !json.Valid(e.Data), "data %s is not valid JSON", e.Data)
		})
	}
}

func TestValidateTimeBounds(t *testing.T) {
	for _, tm := range []string{"1970-01-01T00:00:00Z", "2199-12-31T23:59:59.999999999Z", "2026-08-18T10:00:00+08:00"} {
		_, lerr := Validate([]byte(`{"id":"a","type":"session/end","time":"`+tm+`"}`), 1)
		assert.Nil(t, lerr, "%s: %v", tm, lerr)
	}
}

func TestValidateKeepsFields(t *testing.T) {
	e, lerr := Validate([]byte(`{"id":"x:1","type":"user/message","time":"2026-08-18T10:00:00.5+02:00","session":"s","cwd":"/p/","data":{ "z":1, "text":"t", "a":{"b":[true,null,1.50]} }}`), 1)
	require.Nil(t, lerr, lerr)
	want := events.Envelope{V: 1, ID: "x:1", Type: "user/message", Time: "2026-08-18T10:00:00.5+02:00", Session: "s", Cwd: "/p/",
		Data: json.RawMessage(`{"z":1,"text":"t","a":{"b":[true,null,1.50]}}`)}
	require.True(t, reflect.DeepEqual(e, want), "got %+v (data %s), want %+v (data %s)", e, e.Data, want, want.Data)
}

func TestValidateRejects(t *testing.T) {
	long := strings.Repeat("x", 513)
	tests := []struct {
		name  string
		line  string
		field string
		msg   string // a substring of the message
	}{
		{"Empty", ``, "", "empty line"},
		{"NotJSON", `{"id":`, "", "not valid JSON"},
		{"EnvelopeSplitOverLines", `{"id":"a",`, "", "put each envelope on one line"},
		{"BadJSONToken", `{"id":x}`, "", "not valid JSON: invalid character"},
		{"NotObject", `["id"]`, "", "not a JSON object"},
		{"TrailingData", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z"} {}`, "", "trailing data"},
		{"InvalidUTF8", "{\"id\":\"a\xff\",\"type\":\"session/end\",\"time\":\"2026-08-18T10:00:00Z\"}", "", "UTF-8"},
		{"TooLarge", `{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z","data":{"text":"` + strings.Repeat("y", MaxEventBytes) + `"}}`, "", "256 KiB"},
		{"DuplicateField", `{"id":"a","id":"b","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "twice"},
		{"UnknownField", `{"id":"a","type":"session/end","Time":"2026-08-18T10:00:00Z"}`, "Time", "unknown field"},
		{"VersionNewer", `{"v":2,"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "v", "newer"},
		{"VersionZero", `{"v":0,"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "v", "unsupported version"},
		{"FileEditEscapesRoot", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"../../etc/passwd","content":"x"}}`, "data.path", "not a path inside the memory root"},
		{"FileEditAbsolute", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"/etc/passwd","content":"x"}}`, "data.path", "inside the memory root"},
		{"FileEditBackslash", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"scopes\\..\\..\\x","content":"x"}}`, "data.path", "inside the memory root"},
		{"FileEditUnclean", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"scopes/./../global.md","content":"x"}}`, "data.path", "inside the memory root"},
		{"TimeYear9999", `{"id":"a","type":"session/end","time":"9999-12-31T23:59:59Z"}`, "time", "outside the years 1970–2199"},
		{"TimeYear2200", `{"id":"a","type":"session/end","time":"2200-01-01T00:00:00Z"}`, "time", "outside the years"},
		{"TimeBefore1970", `{"id":"a","type":"session/end","time":"1969-12-31T23:59:59.999Z"}`, "time", "outside the years"},
		{"TimeBefore1970ByZone", `{"id":"a","type":"session/end","time":"1970-01-01T00:30:00+01:00"}`, "time", "outside the years"},
		{"VersionString", `{"v":"1","id":"a","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "v", "integer"},
		{"SeqPresent", `{"seq":42,"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "seq", "assigned by dshmem; remove it"},
		{"IDMissing", `{"type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "missing"},
		{"IDNull", `{"id":null,"type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "missing"},
		{"IDEmpty", `{"id":" ","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "empty"},
		{"IDNotString", `{"id":17,"type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "must be a string, got a number"},
		{"IDTooLong", `{"id":"` + long + `","type":"session/end","time":"2026-08-18T10:00:00Z"}`, "id", "513 bytes"},
		{"TypeMissing", `{"id":"a","time":"2026-08-18T10:00:00Z"}`, "type", "missing"},
		{"TypeUnknown", `{"id":"a","type":"user/shout","time":"2026-08-18T10:00:00Z"}`, "type", `unknown event type "user/shout"`},
		{"TimeMissing", `{"id":"a","type":"session/end"}`, "time", "missing"},
		{"TimeNotRFC3339", `{"id":"a","type":"session/end","time":"yesterday"}`, "time", "not RFC 3339"},
		{"TimeNoZone", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00"}`, "time", "not RFC 3339"},
		{"TimeNumber", `{"id":"a","type":"session/end","time":1755511200}`, "time", "must be a string"},
		{"SessionNotString", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","session":1}`, "session", "must be a string"},
		{"CwdRelative", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","cwd":"proj"}`, "cwd", "not an absolute path"},
		{"CwdBareDrive", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","cwd":"C:"}`, "cwd", "not an absolute path"},
		{"StreamNotAName", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","stream":"ws-XYZ"}`, "stream", "not a stream name"},
		{"StreamDisagreesWithCwd", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","cwd":"/a","stream":"global"}`, "stream", "resolves to"},
		{"DataArray", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","data":[1]}`, "data", "must be a JSON object, got an array"},
		{"DataString", `{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","data":"x"}`, "data", "must be a JSON object, got a string"},
		{"UserMessageNoData", `{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z"}`, "data.text", "missing"},
		{"UserMessageNoText", `{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z","data":{"txt":"hi"}}`, "data.text", "missing"},
		{"UserMessageTextNumber", `{"id":"a","type":"user/message","time":"2026-08-18T10:00:00Z","data":{"text":5}}`, "data.text", "must be a string"},
		{"AssistantMessageNoText", `{"id":"a","type":"assistant/message","time":"2026-08-18T10:00:00Z","data":{}}`, "data.text", "missing"},
		{"ToolCallNoName", `{"id":"a","type":"tool/call","time":"2026-08-18T10:00:00Z","data":{"args":{}}}`, "data.name", "missing"},
		{"ToolCallEmptyName", `{"id":"a","type":"tool/call","time":"2026-08-18T10:00:00Z","data":{"name":""}}`, "data.name", "empty"},
		{"ToolResultNoName", `{"id":"a","type":"tool/result","time":"2026-08-18T10:00:00Z","data":{"ok":true}}`, "data.name", "missing"},
		{"CompactionNoID", `{"id":"a","type":"compaction/summary","time":"2026-08-18T10:00:00Z","data":{"text":"s"}}`, "data.compactionId", "missing"},
		{"CompactionNoText", `{"id":"a","type":"compaction/summary","time":"2026-08-18T10:00:00Z","data":{"compactionId":"c"}}`, "data.text", "missing"},
		{"RememberNoContent", `{"id":"a","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"title":"t"}}`, "data.content", "missing"},
		{"RememberBlankContent", `{"id":"a","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":"  \n"}}`, "data.content", "empty"},
		{"RememberOnlySecret", `{"id":"a","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":"OPENAI_API_KEY=sk-FAKEa1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6"}}`, "data.content", "nothing but a credential"},
		{"ForgetNoEntryID", `{"id":"a","type":"memory/forget","time":"2026-08-18T10:00:00Z","data":{"reason":"r"}}`, "data.entryId", "missing"},
		{"FileEditNoPath", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"content":"c"}}`, "data.path", "missing"},
		{"FileEditNoContent", `{"id":"a","type":"file/edit","time":"2026-08-18T10:00:00Z","data":{"path":"p"}}`, "data.content", "missing"},
		{"OpsNotArray", `{"id":"a","type":"memory/ops","time":"2026-08-18T10:00:00Z","data":{"ops":{}}}`, "data.ops", "must be an array, got an object"},
		{"OpsMissing", `{"id":"a","type":"memory/ops","time":"2026-08-18T10:00:00Z","data":{}}`, "data.ops", "missing"},
		{"OriginUnknown", `{"id":"a","type":"session/start","time":"2026-08-18T10:00:00Z","data":{"origin":"child"}}`, "data.origin", `"top" or "subagent"`},
		{"OriginNotString", `{"id":"a","type":"session/start","time":"2026-08-18T10:00:00Z","data":{"origin":true}}`, "data.origin", "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, lerr := Validate([]byte(tt.line), 3)
			require.NotNil(t, lerr, "Validate accepted %.120s", tt.line)
			if lerr.Line != 3 || lerr.Field != tt.field || !strings.Contains(lerr.Msg, tt.msg) {
				t.Fatalf("got line %d field %q msg %q, want line 3 field %q msg containing %q", lerr.Line, lerr.Field, lerr.Msg, tt.field, tt.msg)
			}
		})
	}
}

func TestValidateErrorIsShort(t *testing.T) {
	huge := strings.Repeat("é", 50000)
	for _, line := range []string{
		`{"id":"a","type":"` + huge + `","time":"2026-08-18T10:00:00Z"}`,
		`{"id":"a","type":"session/end","time":"` + huge + `"}`,
		`{"id":"a","type":"session/end","time":"2026-08-18T10:00:00Z","` + huge + `":1}`,
	} {
		_, lerr := Validate([]byte(line), 1)
		if !assert.NotNil(t, lerr, "accepted a line with a %d-byte value", len(huge)) {
			continue
		}
		assert.False(t, len(lerr.Error()) > 500 || !strings.Contains(lerr.Error(), "…"), "got %d-byte error %.80q…, want a clipped one", len(lerr.Error()), lerr.Error())
	}
}

func TestValidateErrorKeepsID(t *testing.T) {
	e, lerr := Validate([]byte(`{"id":"dsh:s:9","type":"user/message","time":"now"}`), 1)
	require.NotNil(t, lerr, "got id %q, err %v; want id dsh:s:9 and an error", e.ID, lerr)
	require.EqualValues(t, "dsh:s:9", e.ID, "got id %q, err %v; want id dsh:s:9 and an error", e.ID, lerr)
}

func TestLineErrorString(t *testing.T) {
	_, lerr := Validate([]byte(`{"id":"a","type":"session/end","time":"yesterday"}`), 3)
	want := `line 3: field "time": not RFC 3339: "yesterday" (want e.g. 2026-08-18T10:00:00Z)`
	if lerr == nil || lerr.Error() != want {
		t.Fatalf("got %v, want %s", lerr, want)
	}
	got := (&LineError{Line: 2, Msg: "empty line"}).Error()
	require.EqualValues(t, "line 2: empty line", got, "got %q, want %q", got, "line 2: empty line")
}

type seenLine struct {
	no   int
	line string
}

func collect(t *testing.T, input []byte) ([]seenLine, error) {
	t.Helper()
	var got []seenLine
	err := SplitLines(bytes.NewReader(input), func(n int, line []byte) error {
		got = append(got, seenLine{n, string(line)})
		return nil
	})
	return got, err
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []seenLine
	}{
		{"Empty", "", nil},
		{"FinalLineWithoutNewline", "a\nb", []seenLine{{1, "a"}, {2, "b"}}},
		{"BlankLinesSkippedButCounted", "\n  \na\n\t\n\nb\n", []seenLine{{3, "a"}, {6, "b"}}},
		{"CRLF", "a\r\nb\r\n", []seenLine{{1, "a"}, {2, "b"}}},
		{"ByteOrderMark", "\uFEFFa\nb", []seenLine{{1, "a"}, {2, "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := collect(t, []byte(tt.input))
			require.NoError(t, err, "got %v, %v; want %v", got, err, tt.want)
			require.True(t, reflect.DeepEqual(got, tt.want), "got %v, %v; want %v", got, err, tt.want)
		})
	}
}

func TestSplitLinesOversizeLine(t *testing.T) {
	good := validLines[0]
	big := `{"id":"big","type":"user/message","time":"2026-08-18T10:00:00Z","data":{"text":"` + strings.Repeat("y", MaxEventBytes) + `"}}`
	input := good + "\n" + big + "\n" + good + "\n"
	got, err := collect(t, []byte(input))
	require.NoError(t, err, "got %d lines, %v; want 3 lines", len(got), err)
	require.Len(t, got, 3, "got %d lines, %v; want 3 lines", len(got), err)
	require.Len(t, got[1].line, MaxEventBytes+1, "oversize line handed on with %d bytes, want %d", len(got[1].line), MaxEventBytes+1)
	for i, want := range []string{"", "line 2: event is larger than the 256 KiB limit", ""} {
		_, lerr := Validate([]byte(got[i].line), got[i].no)
		switch {
		case want == "" && lerr != nil:
			t.Errorf("line %d: got %v, want no error", got[i].no, lerr)
		case want != "" && (lerr == nil || !strings.HasPrefix(lerr.Error(), want)):
			t.Errorf("line %d: got %v, want %s…", got[i].no, lerr, want)
		}
	}
	// A line of exactly MaxEventBytes passes whole.
	exact := []byte(strings.Repeat(" ", MaxEventBytes-len(good)) + good)
	got, err = collect(t, exact)
	require.NoError(t, err, "got %d lines, %v; want one line of %d bytes", len(got), err, MaxEventBytes)
	require.Len(t, got, 1, "got %d lines, %v; want one line of %d bytes", len(got), err, MaxEventBytes)
	require.Len(t, got[0].line, MaxEventBytes, "got %d lines, %v; want one line of %d bytes", len(got), err, MaxEventBytes)
	_, lerr := Validate([]byte(got[0].line), 1)
	require.Nil(t, lerr, "line of exactly MaxEventBytes: got %v, want no error", lerr)
}

func TestSplitLinesIngestLimit(t *testing.T) {
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	t.Run("OK", func(t *testing.T) {
		input := bytes.Repeat(line, MaxIngestBytes/1024)
		got, err := collect(t, input)
		require.NoError(t, err, "got %d lines, %v; want %d lines", len(got), err, MaxIngestBytes/1024)
		require.Len(t, got, MaxIngestBytes/1024, "got %d lines, %v; want %d lines", len(got), err, MaxIngestBytes/1024)
	})
	t.Run("ErrIngestTooLarge", func(t *testing.T) {
		input := append(bytes.Repeat(line, MaxIngestBytes/1024), '\n')
		got, err := collect(t, input)
		require.ErrorIs(t, err, ErrIngestTooLarge, "got %d lines, %v; want no line and ErrIngestTooLarge", len(got), err)
		require.Len(t, got, 0, "got %d lines, %v; want no line and ErrIngestTooLarge", len(got), err)
		require.Contains(t, err.Error(), "8388608 bytes", "error %q does not name the limit", err)
	})
}

func TestSplitLinesCallbackErrorStops(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := SplitLines(strings.NewReader("a\nb\nc\n"), func(int, []byte) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 2 {
		t.Fatalf("got %v after %d lines, want stop after 2", err, n)
	}
}

// semanticJSON decodes raw JSON into comparable values (numbers as text).
func semanticJSON(t *testing.T, raw []byte) any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "decode %s", raw)
	return v
}

// checkScanIsDecoder fails t unless splitObject's scan (jsonscan.go)
// finds what json.Decoder's tokens find in line, error included, and
// eachMember what json.Unmarshal finds in a valid object.
func checkScanIsDecoder(t *testing.T, line []byte) {
	if !utf8.Valid(line) {
		return // Validate refuses it before splitting
	}
	got, gerr := splitObject(line, 1)
	want, werr := splitObjectTokens(line, 1)
	if !reflect.DeepEqual(gerr, werr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: scan %v %v, decoder %v %v", line, got, gerr, want, werr)
	}
	if !json.Valid(line) || line[skipSpace(line, 0)] != '{' {
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	members := map[string]json.RawMessage{}
	eachMember(line, func(k string, v []byte) bool { members[k] = v; return true })
	if !reflect.DeepEqual(members, obj) {
		t.Fatalf("%q: eachMember %v, json.Unmarshal %v", line, members, obj)
	}
	for k, v := range members {
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			t.Fatal(err)
		}
		if compact(v) != bytes.Equal(c.Bytes(), v) {
			t.Fatalf("%q: compact(%s) is %v", line, v, compact(v))
		}
		if v[0] == '"' {
			var s string
			if err := json.Unmarshal(v, &s); err != nil || s != validString(v) {
				t.Fatalf("%q: member %s: validString %q, json.Unmarshal %q %v", line, k, validString(v), s, err)
			}
		}
	}
}

func TestScanIsDecoder(t *testing.T) {
	lines := []string{``, ` `, `{}`, ` { } `, `[]`, `"x"`, `{"id":1,"id":2}`, `{"what":1}`, `{"id" : "a" , "type":"x"}`,
		`{"id":"a\"b","data":{"text":"x\u00e9\n","n":-1.5e3,"a":[1,{"b":"}"}],"t":true,"z":null}}`,
		`{"data":{ "text" : "a b" }}`, `{"data":{"k":"v","k":"w"}}`, `{"i\u0064":"x"}`, `{"id":"x"} trailing`, `{"id":`, "\t{\"v\":1}\n"}
	for _, l := range validLines {
		lines = append(lines, l)
	}
	for _, l := range lines {
		checkScanIsDecoder(t, []byte(l))
	}
}

func FuzzValidate(f *testing.F) {
	for _, l := range validLines {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"id":"a","type":"session/end","time":"yesterday"}`))
	f.Add([]byte(`{"id":"a","type":"memory/remember","time":"2026-08-18T10:00:00Z","data":{"content":"token=ghp_FAKE0123456789abcdefghijklmnopqrstuv"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkScanIsDecoder(t, line)
		e, lerr := Validate(line, 1)
		if lerr != nil {
			if lerr.Line != 1 || lerr.Msg == "" {
				t.Fatalf("malformed error %#v", lerr)
			}
			return
		}
		if len(e.Data) > 0 && e.Data[0] != '{' {
			t.Fatalf("accepted data %s is not an object", e.Data)
		}
		again, err := events.Marshal(&e)
		if err != nil {
			t.Fatalf("marshal accepted envelope: %v", err)
		}
		e2, lerr := Validate(again, 2)
		if lerr != nil {
			t.Fatalf("re-validate %s: %v", again, lerr)
		}
		d1, d2 := e.Data, e2.Data
		e.Data, e2.Data = nil, nil
		if !reflect.DeepEqual(e, e2) || !reflect.DeepEqual(semanticJSON(t, d1), semanticJSON(t, d2)) {
			t.Fatalf("round trip changed the envelope: %+v %s -> %+v %s", e, d1, e2, d2)
		}
		// What intake accepts, the redactor can rewrite.
		e.Data = d1
		if _, err := NewRedactor().Envelope(&e); err != nil {
			t.Fatalf("redact accepted data %s: %v", d1, err)
		}
	})
}
