package observer

import (
	"encoding/json"
	"reflect"
	"testing"

	"dshmem/events"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecretKey(t *testing.T) {
	for key, want := range map[string]bool{
		"password": true, "DB_PASSWORD": true, "dbPassword": true, "passwd": true, "secret": true,
		"client_secret": true, "clientSecret": true, "token": true, "access_token": true, "X-Auth-Token": true,
		"api_key": true, "apiKey": true, "X-Api-Key": true, "apikey": true, "private_key": true, "privateKey": true,
		"AWS_SECRET_ACCESS_KEY": true, "aws_access_key": true, "authorization": true, "Authorization": true,
		"cookie": true, "Set-Cookie": true, "credentials": true, "auth": true, "signing_key": true, "密码": true,
		"令牌": true, "refreshToken": true, "encryption-key": true, "otp": true,
		"Passwort": true, "contraseña": true, "пароль": true, "パスワード": true, "비밀번호": true, "db_pass": true, "mysqlPass": true,
		// Not secrets: counts, kinds, names, hashes, ids.
		"max_tokens": false, "input_tokens": false, "token_count": false, "tokenizer": false, "token_type": false,
		"secret_name": false, "password_hash": false, "passwordHint": false, "key": false, "cache_key": false,
		"keys": false, "author": false, "authority": false, "senderSessionId": false, "sessionId": false,
		"pass": false, "bypass": false, "passes": false, "access_key_id": false, "primaryKey": false, "keyboard": false, "": false, "monkey": false, "tokens": false,
	} {
		assert.Equal(t, want, SecretKey(key), "SecretKey(%q)", key)
	}
}

func TestRedactSecretKeys(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"TopLevel", `{"password":"Fake-pw-12"}`, `{"password":"[REDACTED:secret-field]"}`},
		{"ToolArguments", `{"name":"http","args":{"url":"https://x.test","headers":{"X-Api-Key":"abc123def456","Accept":"json"}}}`,
			`{"name":"http","args":{"url":"https://x.test","headers":{"X-Api-Key":"[REDACTED:secret-field]","Accept":"json"}}}`},
		{"EnvMap", `{"env":{"DB_PASSWORD":"s3cr3t-v4lue","PATH":"/usr/bin","GITHUB_TOKEN":"$GITHUB_TOKEN"}}`,
			`{"env":{"DB_PASSWORD":"[REDACTED:secret-field]","PATH":"/usr/bin","GITHUB_TOKEN":"$GITHUB_TOKEN"}}`},
		{"Deep", `{"a":[{"b":{"c":[{"client_secret":"zz9-yy8-xx7"}]}}]}`, `{"a":[{"b":{"c":[{"client_secret":"[REDACTED:secret-field]"}]}}]}`},
		{"UnderASecretKeyEverythingIs", `{"credentials":{"user":"bob","pin":123456,"list":["one-val","two-val"],"ok":true}}`,
			`{"credentials":{"user":"[REDACTED:secret-field]","pin":"[REDACTED:secret-field]","list":["[REDACTED:secret-field]","[REDACTED:secret-field]"],"ok":true}}`},
		{"NumericPassword", `{"password":20261202}`, `{"password":"[REDACTED:secret-field]"}`},
		{"EmptyAndMarkersStay", `{"password":"","token":null,"secret":"required","api_key":"none","pwd":"***"}`,
			`{"password":"","token":null,"secret":"required","api_key":"none","pwd":"***"}`},
		{"CountsStay", `{"usage":{"input_tokens":1200,"max_tokens":4096},"token_count":3,"tokenizer":"bpe"}`,
			`{"usage":{"input_tokens":1200,"max_tokens":4096},"token_count":3,"tokenizer":"bpe"}`},
		{"KnownFormatKeepsItsKind", `{"token":"glpat-AbCdEf0123456789xYzW"}`, `{"token":"[REDACTED:gitlab-pat]"}`},
		{"SiblingsAfterTheSecretStay", `{"token":"abc-123-def","name":"ci","n":42}`, `{"token":"[REDACTED:secret-field]","name":"ci","n":42}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := events.Envelope{Data: json.RawMessage(c.in)}
			_, err := NewRedactor().Envelope(&e)
			require.NoError(t, err)
			assert.Equal(t, c.want, string(e.Data))
			// Idempotent.
			again := events.Envelope{Data: e.Data}
			kinds, err := NewRedactor().Envelope(&again)
			require.NoError(t, err)
			assert.Equal(t, string(e.Data), string(again.Data))
			assert.Empty(t, kinds)
		})
	}
}

func TestRedactNewShapes(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"MySQLGluedPassword", "mysql -u root -pS3cretPw1 app", "mysql -u root -p[REDACTED:cli-password] app"},
		{"MySQLPromptStays", "mysql -u root -p app", "mysql -u root -p app"},
		{"OptionWithSpace", "tool --api-key Zx81kd92jd83 --verbose", "tool --api-key [REDACTED:cli-password] --verbose"},
		{"OptionFileStays", "gh auth login --token-file ~/.tok", "gh auth login --token-file ~/.tok"},
		{"SSHPortStays", "ssh -p 2222 deploy@host", "ssh -p 2222 deploy@host"},
		{"AuthorizationOtherScheme", "Authorization: ApiKey 9f8e7d6c5b4a3921", "Authorization: ApiKey [REDACTED:authorization]"},
		{"CookieHeader", "Cookie: sid=abc123xyz; theme=dark", "Cookie: [REDACTED:cookie]"},
		{"CookieProseStays", "cookie: chocolate chip", "cookie: chocolate chip"},
		{"SignedURL", "GET /f?X-Amz-Signature=ab12cd34ef56&X-Amz-Expires=60", "GET /f?X-Amz-Signature=[REDACTED:url-secret-param]&X-Amz-Expires=60"},
		{"PageParamStays", "https://x.test/?key=value&page=2", "https://x.test/?key=value&page=2"},
		{"ADOPassword", "Server=s;Uid=u;Pwd=Pa55w0rd!;", "Server=s;Uid=u;Pwd=[REDACTED:connection-string];"},
		{"ChineseIs", "WiFi 密码是Fake8888，连上就行", "WiFi 密码是[REDACTED:secret-label-zh]，连上就行"},
		{"ChineseQuestionStays", "密码是什么？", "密码是什么？"},
		// The word for password in other languages, and other shapes.
		{"Japanese", "パスワード: Hunter2xyz9", "パスワード: [REDACTED:password]"},
		{"Korean", "비밀번호=Qwe12345rt", "비밀번호=[REDACTED:password]"},
		{"Spanish", "la contraseña: Secreto123x", "la contraseña: [REDACTED:password]"},
		{"German", "Passwort=Geheim123x", "Passwort=[REDACTED:password]"},
		{"French", "mot de passe : Secret123x", "mot de passe : [REDACTED:password]"},
		{"Russian", "пароль: Tajna123x9", "пароль: [REDACTED:password]"},
		{"EnvPassSuffix", "DB_PASS=Zx81kd92jd", "DB_PASS=[REDACTED:password]"},
		{"BypassStays", "bypass: enabled", "bypass: enabled"},
		{"RedisCLI", "redis-cli -h cache -a Zx81kd92jd ping", "redis-cli -h cache -a [REDACTED:cli-password] ping"},
	}
	r := NewRedactor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := r.String(tt.in)
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzRedactEnvelope: data that is a JSON object comes back a JSON
// object with the same keys in the same order (where no key is a secret
// itself), and redacting it again changes nothing.
func FuzzRedactEnvelope(f *testing.F) {
	f.Add(`{"password":"Fake-pw-12"}`)
	f.Add(`{"args":{"headers":{"X-Api-Key":"abc123def456"}},"n":[1,2.5e3,true,null]}`)
	f.Add(`{"text":"token=ghp_FAKE0123456789abcdefghijklmnopqrstuv","credentials":{"a":[{"b":"c1d2e3"}]}}`)
	f.Add(`{"\u00e9":"\u0000","k":"\ud83d\ude42"}`)
	f.Fuzz(func(t *testing.T, data string) {
		checkRedactScan(t, []byte(data))
		var v map[string]any
		if json.Unmarshal([]byte(data), &v) != nil {
			return
		}
		e := events.Envelope{Data: json.RawMessage(data)}
		if _, err := NewRedactor().Envelope(&e); err != nil {
			t.Fatalf("Envelope(%s): %v", data, err)
		}
		var out map[string]any
		if err := json.Unmarshal(e.Data, &out); err != nil {
			t.Fatalf("Envelope(%s) gave %s, not a JSON object: %v", data, e.Data, err)
		}
		again := events.Envelope{Data: e.Data}
		if _, err := NewRedactor().Envelope(&again); err != nil || string(again.Data) != string(e.Data) {
			t.Fatalf("not idempotent: %s -> %s -> %s (%v)", data, e.Data, again.Data, err)
		}
	})
}

// checkRedactScan fails t unless redactValid writes what the token walk
// writes, and finds the same kinds, for data it may take.
func checkRedactScan(t *testing.T, data []byte) {
	t.Helper()
	if !scannable(data) {
		return
	}
	r := NewRedactor()
	fTok, fScan := map[string]bool{}, map[string]bool{}
	want, err := r.redactJSON(data, fTok)
	if err != nil {
		t.Fatalf("the token walk refused valid %q: %v", data, err)
	}
	got := r.redactValid(data, fScan)
	if string(got) != string(want) {
		t.Fatalf("redact %q:\n scan   %q\n tokens %q", data, got, want)
	}
	if !reflect.DeepEqual(fTok, fScan) {
		t.Fatalf("redact %q: scan found %v, tokens %v", data, fScan, fTok)
	}
}

// TestRedactScanIsTokens: the scan and the token walk agree on escapes
// in every form (the encoder's and others), white space, numbers as
// written, nesting, secrets under keys at every depth, and values at the
// top that are not objects.
func TestRedactScanIsTokens(t *testing.T) {
	for _, data := range []string{
		`{}`, `[]`, `"x"`, `12`, `null`, ` { "a" : [ 1 , 2.50 , -0.1e+3 , true , false , null ] , "b" : { } } `,
		`{"t":"line\nnext\ttab\r\b\f \" \\ \/ \u00e9 \u0041 \u001f \u001F \u0008 \u2028 \u2029 \ud83d\ude42 \ud83d \ufffd"}`,
		"{\"t\":\"raw \u2028 and \u2029 and é and <&>\"}",
		`{"password":"Fake-pw-12","pin":1234,"n":123,"token":true,"otp":[9876,"x1y2z3w4"],"ok":"none"}`,
		`{"args":{"headers":{"X-Api-Key":"abc123def456","Accept":"*/*"}},"credentials":{"a":[{"b":"c1d2e3"}]}}`,
		`{"text":"token=ghp_FAKE0123456789abcdefghijklmnopqrstuv and sk-ant-FAKEFAKEFAKEFAKEFAKE12","k\u0065y":"v"}`,
		`{"ghp_FAKE0123456789abcdefghijklmnopqrstuv":"a key that is a secret"}`,
		`[{"password":"[REDACTED:secret-field]"},{"password":"${{ secrets.X }}"},{"password":""}]`,
		`{"a":{"b":{"c":{"d":[[["deep"]]]}}},"e":"last"}`,
	} {
		checkRedactScan(t, []byte(data))
		if !scannable([]byte(data)) {
			t.Errorf("%q is valid JSON of valid UTF-8 but not scannable", data)
		}
	}
	// Not taken: invalid JSON, invalid UTF-8 (the decoder replaces it).
	for _, data := range []string{`{"a":`, "{\"a\":\"\xff\"}", `{"a":1}x`} {
		if scannable([]byte(data)) {
			t.Errorf("%q is scannable", data)
		}
	}
}
