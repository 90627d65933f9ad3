package secretrules

import (
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// gitleaksTOML is gitleaks' default rule set, v8.30.1, unchanged
// (config/gitleaks.toml of github.com/zricethezav/gitleaks/v8, MIT, see
// LICENSE-gitleaks). It is data: updating it is copying the newer file.
//
//go:embed gitleaks.toml
var gitleaksTOML string

// Source names the rule set and its version, for --version style reports.
const Source = "gitleaks v8.30.1 default rules (MIT)"

// Rule is one rule of the set, as written in the file.
type Rule struct {
	ID          string
	Description string
	Regex       string
	Path        string // a rule for files of this path only; we have no paths
	Keywords    []string
	Entropy     float64 // minimum Shannon entropy of the secret; 0: none
	SecretGroup int     // the submatch that is the secret; 0: the first non-empty one
	Allowlists  []Allowlist
}

// Allowlist is a rule's (or the global) list of findings to keep.
type Allowlist struct {
	Condition   string // "OR" (default) or "AND" with Paths
	RegexTarget string // "secret" (default), "match" or "line"
	Regexes     []string
	Stopwords   []string
	Paths       []string
}

// Config is the parsed file.
type Config struct {
	Global Allowlist
	Rules  []Rule
}

// Parse reads the subset of TOML that gitleaks' generated rule file uses:
// comments, [allowlist], [[rules]] and [[rules.allowlists]] headers, and
// key = value lines whose value is a literal string ('…' or ”'…”' on
// one line), a basic string ("…" with escapes), a number, or an array of
// strings that may span lines. Anything else is an error naming its line,
// so a newer file that uses more of TOML fails loudly, not silently.
func Parse(src string) (*Config, error) {
	cfg := &Config{}
	var table string // "", "allowlist", "rules", "rules.allowlists"
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		switch line {
		case "[allowlist]":
			table = "allowlist"
			continue
		case "[[rules]]":
			table = "rules"
			cfg.Rules = append(cfg.Rules, Rule{})
			continue
		case "[[rules.allowlists]]":
			if len(cfg.Rules) == 0 {
				return nil, fmt.Errorf("line %d: [[rules.allowlists]] before any [[rules]]", lineNo)
			}
			table = "rules.allowlists"
			r := &cfg.Rules[len(cfg.Rules)-1]
			r.Allowlists = append(r.Allowlists, Allowlist{})
			continue
		}
		if strings.HasPrefix(line, "[") {
			return nil, fmt.Errorf("line %d: unknown table %s", lineNo, line)
		}
		key, raw, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: want key = value, got %q", lineNo, line)
		}
		key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
		var val value
		var err error
		if strings.HasPrefix(raw, "[") {
			// An array: gather lines up to the closing bracket.
			// Only a line with a ']' can close it: the text before it
			// parses the same with or without the lines after, so the
			// array is parsed again only then (not once per line).
			var b strings.Builder
			b.WriteString(raw)
			list, perr := parseArray(raw)
			for perr != nil {
				i++
				if i >= len(lines) {
					return nil, fmt.Errorf("line %d: array of %s is not closed", lineNo, key)
				}
				b.WriteString("\n")
				b.WriteString(lines[i])
				if strings.Contains(lines[i], "]") {
					list, perr = parseArray(b.String())
				}
			}
			val.list, val.isList = list, true
		} else {
			val, err = parseScalar(raw)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", lineNo, key, err)
		}
		if err := cfg.set(table, key, val); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
	}
	return cfg, nil
}

// value is a parsed right-hand side.
type value struct {
	str    string
	num    float64
	isNum  bool
	list   []string
	isList bool
}

func (c *Config) set(table, key string, v value) error {
	str := func() (string, error) {
		if v.isList || v.isNum {
			return "", fmt.Errorf("%s: want a string", key)
		}
		return v.str, nil
	}
	list := func() ([]string, error) {
		if !v.isList {
			return nil, fmt.Errorf("%s: want an array", key)
		}
		return v.list, nil
	}
	var err error
	switch table {
	case "":
		// title, minVersion: nothing we use.
		return nil
	case "allowlist":
		err = setAllow(&c.Global, key, str, list)
	case "rules":
		r := &c.Rules[len(c.Rules)-1]
		switch key {
		case "id":
			r.ID, err = str()
		case "description":
			r.Description, err = str()
		case "regex":
			r.Regex, err = str()
		case "path":
			r.Path, err = str()
		case "keywords":
			r.Keywords, err = list()
		case "entropy":
			if !v.isNum {
				return errors.New("entropy: want a number")
			}
			r.Entropy = v.num
		case "secretGroup":
			if !v.isNum || v.num != float64(int(v.num)) || v.num < 0 {
				return errors.New("secretGroup: want a whole number")
			}
			r.SecretGroup = int(v.num)
		case "tags":
		default:
			return fmt.Errorf("unknown rule key %q", key)
		}
	case "rules.allowlists":
		r := &c.Rules[len(c.Rules)-1]
		err = setAllow(&r.Allowlists[len(r.Allowlists)-1], key, str, list)
	}
	return err
}

func setAllow(a *Allowlist, key string, str func() (string, error), list func() ([]string, error)) error {
	var err error
	switch key {
	case "description":
		_, err = str()
	case "condition":
		a.Condition, err = str()
	case "regexTarget":
		a.RegexTarget, err = str()
	case "regexes":
		a.Regexes, err = list()
	case "stopwords":
		a.Stopwords, err = list()
	case "paths":
		a.Paths, err = list()
	case "commits":
	default:
		return fmt.Errorf("unknown allowlist key %q", key)
	}
	return err
}

func parseScalar(raw string) (value, error) {
	s, rest, err := parseString(raw)
	if err == nil {
		if rest = strings.TrimSpace(rest); rest != "" && !strings.HasPrefix(rest, "#") {
			return value{}, fmt.Errorf("text after the string: %q", rest)
		}
		return value{str: s}, nil
	}
	if f, perr := strconv.ParseFloat(raw, 64); perr == nil {
		return value{num: f, isNum: true}, nil
	}
	return value{}, err
}

// parseString reads one string at the start of s and returns the rest.
func parseString(s string) (string, string, error) {
	switch {
	case strings.HasPrefix(s, "'''"):
		end := strings.Index(s[3:], "'''")
		if end < 0 {
			return "", "", errors.New("''' string not closed on its line")
		}
		// TOML allows one or two quotes right before the closing ''':
		// the string ends at the last ''' of the run.
		for k := 0; k < 2 && 3+end+3 < len(s) && s[3+end+3] == '\''; k++ {
			end++
		}
		return s[3 : 3+end], s[3+end+3:], nil
	case strings.HasPrefix(s, "'"):
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", "", errors.New("' string not closed")
		}
		return s[1 : 1+end], s[2+end:], nil
	case strings.HasPrefix(s, `"`):
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '"':
				return b.String(), s[i+1:], nil
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case '"', '\\':
					b.WriteByte(s[i])
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case 'r':
					b.WriteByte('\r')
				case 'u', 'U':
					n := 4
					if s[i] == 'U' {
						n = 8
					}
					if i+n >= len(s) {
						return "", "", errors.New("short unicode escape")
					}
					r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
					if err != nil {
						return "", "", fmt.Errorf("bad unicode escape: %w", err)
					}
					b.WriteRune(rune(r))
					i += n
				default:
					return "", "", fmt.Errorf("unknown escape \\%c", s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", "", errors.New(`" string not closed`)
	}
	return "", "", fmt.Errorf("want a string, got %q", s)
}

func parseArray(text string) ([]string, error) {
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "[") {
		return nil, errors.New("want an array")
	}
	s = s[1:]
	var out []string
	for {
		s = skipSpaceAndComments(s)
		if s == "" {
			return nil, errors.New("array not closed")
		}
		if s[0] == ']' {
			if rest := strings.TrimSpace(s[1:]); rest != "" && !strings.HasPrefix(rest, "#") {
				return nil, fmt.Errorf("text after the array: %q", rest)
			}
			return out, nil
		}
		str, rest, err := parseString(s)
		if err != nil {
			return nil, err
		}
		out = append(out, str)
		s = skipSpaceAndComments(rest)
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "]") {
			return nil, errors.New("want , or ] after an array item")
		}
	}
}

func skipSpaceAndComments(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if !strings.HasPrefix(s, "#") {
			return s
		}
		if nl := strings.IndexByte(s, '\n'); nl >= 0 {
			s = s[nl+1:]
		} else {
			return ""
		}
	}
}
