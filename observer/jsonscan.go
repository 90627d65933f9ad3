package observer

import (
	"bytes"
	"encoding/json"
)

// Scanning of JSON that encoding/json has already accepted (json.Valid,
// or the output of json.Compact). Intake splits every line into its
// fields and an event's data into its members; going through
// json.Decoder's tokens for that cost a tenth of an ingest's CPU. On
// valid input the scan below finds the same members, and the decoders
// stay in use for input that is not valid, where their errors are what
// the caller reports.

// eachMember calls fn with the key and the raw value of every member of
// the JSON object b, in order, until fn returns false. b must be valid
// JSON whose first byte past white space is '{'.
func eachMember(b []byte, fn func(key string, val []byte) bool) {
	i := skipSpace(b, 0) + 1 // past '{'
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		ke := stringEnd(b, i)
		key := validString(b[i:ke])
		i = skipSpace(b, ke) + 1 // past ':'
		i = skipSpace(b, i)
		ve := valueEnd(b, i)
		if !fn(key, b[i:ve]) {
			return
		}
		i = ve
	}
}

// validString decodes raw, a valid JSON string literal of valid UTF-8.
// Without a backslash its bytes between the quotes are the string.
func validString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid: cannot fail
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the JSON value at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number, true, false or null
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// compact reports whether valid JSON b holds no white space outside its
// strings, so json.Compact would return it unchanged.
func compact(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}
