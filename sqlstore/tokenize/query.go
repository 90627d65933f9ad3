package tokenize

import "strings"

// Mode says how MatchQuery combines the terms of a query.
type Mode int

const (
	// Any matches rows holding at least one term (terms joined by OR);
	// bm25 then ranks rows holding more and rarer terms first.
	Any Mode = iota
	// All matches only rows holding every token of the query, where a
	// compound or camelCase word counts as held when the row holds it
	// whole or holds all its pieces (see MatchQuery).
	All
)

// MatchQuery returns an FTS5 MATCH expression over a column filled with
// IndexText, or "" when s has no tokens (the caller must not run MATCH with
// an empty expression: FTS5 reports a syntax error). Every term is an FTS5
// string in double quotes (a quote inside is doubled, although tokens never
// hold one).
//
// Any: every distinct term joined by OR.
//
// All: every distinct query group joined by AND. A CJK token is a group of
// its own. A compound is the group ("compound" OR (seg1 AND seg2 …)) where
// each segment with parts is ("segment" OR ("part1" AND "part2" …)). So
// "go_build.sh" finds "/usr/local/bin/go_build.sh" (whose compound token is
// usrlocalbingobuildsh) through its segments, and "parseHTTP" finds
// "parseHTTPRequest" through its parts, while a row holding the exact
// compound still scores for it in bm25, which sums over every phrase of the
// expression. A plain AND of all terms would demand the query's own
// compound token and miss both.
func MatchQuery(s string, mode Mode) string {
	if mode == All {
		t := tokenizer{wantGroups: true}
		t.run(s)
		return allOfDistinct(t.groups)
	}
	terms := Terms(s)
	if len(terms) == 0 {
		return ""
	}
	q := make([]string, len(terms))
	for i, term := range terms {
		q[i] = Quote(term)
	}
	return strings.Join(q, " OR ")
}

// Quote makes term an FTS5 string: in double quotes, a quote inside
// doubled. Recall probes each query token with MATCH Quote(token).
func Quote(term string) string {
	return `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
}

// anyOf returns the OR of two expressions, parenthesized.
func anyOf(a, b string) string {
	return "(" + a + " OR " + b + ")"
}

// allOf returns the AND of exprs, parenthesized when there is more than one.
func allOf(exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	return "(" + strings.Join(exprs, " AND ") + ")"
}

// allOfDistinct joins the distinct exprs with AND, unparenthesized.
func allOfDistinct(exprs []string) string {
	seen := make(map[string]struct{}, len(exprs))
	var out []string
	for _, e := range exprs {
		if _, ok := seen[e]; !ok {
			seen[e] = struct{}{}
			out = append(out, e)
		}
	}
	return strings.Join(out, " AND ")
}
