package observer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"dshmem/events"
)

// Envelope redacts every string in e.Data, object keys included, and
// re-encodes it compactly with keys in their original order and numbers
// as written (encoding through map[string]any would sort the keys and
// round the numbers). The output depends only on the decoded values, so
// equal data gives equal bytes however it was escaped. ID, Type, Time,
// Session and Cwd are left alone. It returns the kinds found, sorted.
//
// Redacting keys can make two keys equal; both are kept, as in the input.
func (r *Redactor) Envelope(e *events.Envelope) ([]string, error) {
	if len(e.Data) == 0 {
		return nil, nil
	}
	found := map[string]bool{}
	if scannable(e.Data) {
		e.Data = r.redactValid(e.Data, found)
		return sortedKinds(found), nil
	}
	out, err := r.redactJSON(e.Data, found)
	if err != nil {
		return nil, fmt.Errorf("redact data: %w", err)
	}
	e.Data = out
	return sortedKinds(found), nil
}

// container is one open object or array during the token walk.
type container struct {
	object  bool
	n       int  // members written so far
	wantKey bool // object: the next string is a key
	// secret: the container is the value of a key that names a secret
	// (or lies inside one), so every string and number in it is one.
	secret bool
	// keySecret: object: the current member's key names a secret.
	keySecret bool
}

// redactJSON walks one JSON value token by token, writing it back with
// every string redacted. Envelope takes it for data that is not valid
// JSON of valid UTF-8, where the decoder's error (or its replacement of
// bad bytes) is what it gives; redactValid does the rest.
func (r *Redactor) redactJSON(data []byte, found map[string]bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(data))
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	var stack []container
	started := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if started && len(stack) == 0 {
			return nil, errors.New("trailing data after the JSON value")
		}
		started = true
		// A value (not a key, not a closing delimiter) is preceded by a
		// comma when it is not the first in an array.
		isKey := false
		// inSecret: this token is a value whose key (or an enclosing
		// one) names a secret.
		inSecret := false
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			inSecret = top.secret || top.object && !top.wantKey && top.keySecret
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			_, isString := tok.(string)
			isKey = top.object && top.wantKey && isString
			closing := tok == json.Delim('}') || tok == json.Delim(']')
			switch {
			case closing:
			case isKey:
				if top.n > 0 {
					out.WriteByte(',')
				}
				top.wantKey = false
			case top.object:
				top.wantKey = true
				top.n++
			default:
				if top.n > 0 {
					out.WriteByte(',')
				}
				top.n++
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(t))
			switch t {
			case '{':
				stack = append(stack, container{object: true, wantKey: true, secret: inSecret})
			case '[':
				stack = append(stack, container{secret: inSecret})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			v := r.redact(t, found)
			if isKey {
				stack[len(stack)-1].keySecret = SecretKey(t)
			} else if inSecret && secretValue(v) {
				v = placeholder(kindSecretField)
				found[kindSecretField] = true
			}
			if err := enc.Encode(v); err != nil {
				return nil, err
			}
			out.Truncate(out.Len() - 1) // Encode's newline
			if isKey {
				out.WriteByte(':')
			}
		case json.Number:
			if inSecret && len(t.String()) >= 4 {
				// A numeric PIN or password: a string placeholder.
				out.WriteString(`"` + placeholder(kindSecretField) + `"`)
				found[kindSecretField] = true
				break
			}
			out.WriteString(t.String())
		case bool:
			fmt.Fprint(&out, t)
		case nil:
			out.WriteString("null")
		}
	}
	if !started || len(stack) > 0 {
		return nil, io.ErrUnexpectedEOF
	}
	return out.Bytes(), nil
}

// secretValue reports whether v, the string value of a secret-named key,
// holds a secret to replace: not a placeholder already, not empty, not a
// reference to where the secret lives ($TOKEN, ${{ secrets.X }}), not a
// word such as "none" or "required".
func secretValue(v string) bool {
	if placeholderRe.FindString(v) == v {
		return false
	}
	return plausibleValue(v)
}

// secretWords end a key that names a secret; secretPairs are two last
// words that do ("api key", "private key").
var (
	secretWords = map[string]bool{
		"password": true, "passwd": true, "passphrase": true, "secret": true, "token": true,
		"apikey": true, "accesskey": true, "privatekey": true, "secretkey": true, "clientsecret": true,
		"authorization": true, "cookie": true, "cookies": true, "credential": true, "credentials": true,
		"auth": true, "pwd": true, "signature": true, "otp": true,
		"密码": true, "口令": true, "密钥": true, "秘钥": true, "私钥": true, "令牌": true,
		"passwort": true, "kennwort": true, "contraseña": true, "senha": true, "пароль": true,
		"パスワード": true, "비밀번호": true, "암호": true,
	}
	secretPairs = map[string]bool{
		"api key": true, "access key": true, "private key": true, "secret key": true, "auth key": true,
		"signing key": true, "encryption key": true, "master key": true, "account key": true,
		"client key": true, "session key": true, "license key": true, "api token": true,
		"shared key": true, "access token": true, "refresh token": true, "secret access": true,
	}
)

// SecretKey reports whether an object key names a secret: its last word
// is one (password, token, secret, cookie, authorization, …) or its last
// two are ("api key", "private_key", "X-Api-Key"). Words
// split at anything but letters and digits and at lower-to-upper case
// changes, so "max_tokens", "token_count" and "tokenizer" are not.
func SecretKey(key string) bool {
	words := keyWords(key)
	n := len(words)
	if n == 0 {
		return false
	}
	if secretWords[words[n-1]] {
		return true
	}
	if n >= 2 && words[n-1] == "pass" { // db_pass, mysqlPass; a bare "pass" may be a test's
		return true
	}
	return n >= 2 && secretPairs[words[n-2]+" "+words[n-1]]
}

// keyWords splits a key into lower-case words.
func keyWords(key string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, c := range key {
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			if unicode.IsUpper(c) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
				flush()
			}
			cur = append(cur, c)
		default:
			flush()
		}
		prev = c
	}
	flush()
	return words
}
