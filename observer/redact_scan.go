package observer

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// redactValid is redactJSON for data that json.Valid accepts and that
// is valid UTF-8 (what intake hands it): it walks the bytes with the
// scan of jsonscan.go instead of json.Decoder's tokens and writes the
// same output. A string that redaction leaves alone and whose literal is
// already in the form the encoder writes is copied as it is; the others
// go through the encoder. checkRedactScan (TestRedactScanIsTokens,
// FuzzRedactEnvelope) holds it equal to redactJSON.
func (r *Redactor) redactValid(data []byte, found map[string]bool) []byte {
	w := scanRedactor{r: r, found: found, out: make([]byte, 0, len(data))}
	w.value(data, skipSpace(data, 0), false)
	return w.out
}

type scanRedactor struct {
	r     *Redactor
	found map[string]bool
	out   []byte
	enc   *json.Encoder // of buf, made at the first string that needs it
	buf   bytes.Buffer
}

// value writes the redacted JSON value at b[i] and returns the index past
// it. secret: the value lies under a key that names a secret.
func (w *scanRedactor) value(b []byte, i int, secret bool) int {
	switch b[i] {
	case '{':
		w.out = append(w.out, '{')
		for n := 0; ; n++ {
			i = skipSpace(b, i+1) // past '{' or ','
			if b[i] == '}' {
				break
			}
			ke := stringEnd(b, i)
			key := validString(b[i:ke])
			if n > 0 {
				w.out = append(w.out, ',')
			}
			w.str(b[i:ke], key, false) // a key is redacted, never replaced
			w.out = append(w.out, ':')
			i = skipSpace(b, skipSpace(b, ke)+1) // past ':'
			i = skipSpace(b, w.value(b, i, secret || SecretKey(key)))
			if b[i] == '}' {
				break
			}
		}
		w.out = append(w.out, '}')
		return i + 1
	case '[':
		w.out = append(w.out, '[')
		i = skipSpace(b, i+1)
		for n := 0; b[i] != ']'; n++ {
			if n > 0 {
				w.out = append(w.out, ',')
			}
			i = skipSpace(b, w.value(b, i, secret))
			if b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		w.out = append(w.out, ']')
		return i + 1
	case '"':
		e := stringEnd(b, i)
		w.str(b[i:e], validString(b[i:e]), secret)
		return e
	}
	e := valueEnd(b, i)
	lit := b[i:e]
	if secret && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') && len(lit) >= 4 {
		// A numeric PIN or password: a string placeholder.
		w.out = append(w.out, `"`+placeholder(kindSecretField)+`"`...)
		w.found[kindSecretField] = true
	} else {
		w.out = append(w.out, lit...)
	}
	return e
}

// str writes the string s, whose literal is raw, redacted; a value under
// a secret key is replaced whole when it holds a secret.
func (w *scanRedactor) str(raw []byte, s string, secret bool) {
	v := w.r.redact(s, w.found)
	if secret && secretValue(v) {
		v = placeholder(kindSecretField)
		w.found[kindSecretField] = true
	}
	if v == s && encodedForm(raw) {
		w.out = append(w.out, raw...)
		return
	}
	if w.enc == nil {
		w.enc = json.NewEncoder(&w.buf)
		w.enc.SetEscapeHTML(false)
	}
	w.buf.Reset()
	_ = w.enc.Encode(v) // a string: cannot fail
	w.out = append(w.out, bytes.TrimSuffix(w.buf.Bytes(), []byte("\n"))...)
}

// encodedForm reports whether raw, a valid JSON string literal of valid
// UTF-8, is what encoding/json writes for the string it holds (HTML
// characters not escaped): its only escapes are \" \\ \b \f \n \r \t,
// \u00xx in lower-case hex for the other control characters, and
// \u2028 and \u2029, which it holds in no other form.
func encodedForm(raw []byte) bool {
	for i := 1; i < len(raw)-1; i++ {
		switch c := raw[i]; {
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && (raw[i+2] == 0xA8 || raw[i+2] == 0xA9):
			return false // U+2028, U+2029 as themselves
		case c != '\\':
		case raw[i+1] == 'u':
			h := raw[i+2 : i+6]
			switch string(h) {
			case "2028", "2029":
			default:
				if h[0] != '0' || h[1] != '0' || h[2] > '1' || !lowerHex(h[3]) {
					return false
				}
				switch n := (h[2]-'0')<<4 | hexVal(h[3]); n {
				case '\b', '\f', '\n', '\r', '\t':
					return false // written as \b, \f, \n, \r, \t
				}
			}
			i += 5
		case bytes.IndexByte([]byte(`"\bfnrt`), raw[i+1]) >= 0:
			i++
		default:
			return false // \/
		}
	}
	return true
}

func lowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func hexVal(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// scannable reports whether redactValid may take data.
func scannable(data []byte) bool { return json.Valid(data) && utf8.Valid(data) }
