// Package tokenize turns text into the search tokens dshmem indexes and
// queries with, the same way on both sides.
//
// SQLite's unicode61 tokenizer keeps a whole run of Chinese or Japanese as
// one token and glues adjacent ASCII onto it, so '记忆' is never found in
// '我们的记忆注入逻辑需要修复'; the trigram tokenizer cannot match a
// two-character query at all. Instead of a custom FTS5 tokenizer (modernc
// has no way to register one from Go) the index stores pre-tokenized text:
// IndexText(s) in an FTS5 column declared tokenize='unicode61' (or 'ascii'),
// and a query's terms come from Terms, each matched as Quote(term). Each of
// our tokens is then exactly one FTS5 token, which the package tests check
// against the linked SQLite.
//
// # Normalization
//
// A subset of NFKC (golang.org/x/text is not a dependency), applied rune by
// rune before anything else:
//
//   - U+FF01..U+FF5E full-width ASCII -> U+0021..U+007E ('ＤＳＨ' -> 'DSH')
//   - U+3000 ideographic space and every rune unicode.IsSpace accepts -> ' '
//   - U+FF61..U+FF9F half-width katakana and CJK punctuation -> full-width;
//     a half-width (semi-)voiced mark composes with the kana before it
//     ('ｶﾞ' -> 'ガ', 'ﾊﾟ' -> 'パ'), otherwise it becomes a combining mark
//   - U+FB00..U+FB06 Latin ligatures -> their letters ('ﬁ' -> 'fi')
//
// Not done: canonical composition/decomposition (an NFD 'e'+U+0301 loses its
// accent, since combining marks are dropped, while a precomposed 'é' keeps
// it: declare the column with unicode61's default remove_diacritics so both
// match), superscripts, circled numbers, compatibility ideographs, Hangul
// jamo composition, full-width symbols outside U+FF01..U+FF5E.
//
// Case folding is per rune lower(upper(r)) with the unicode package, which
// also merges ſ/s, ς/σ and the Kelvin sign with k; camelCase splitting
// looks at case before folding.
//
// # Tokens
//
// Runes fall into five classes:
//
//   - word: letters and numbers outside the CJK-like scripts (ASCII
//     letters and digits, Latin, Greek, Cyrillic, Thai, …)
//   - cjk: letters and numbers of Han, Hiragana, Katakana (with the
//     prolonged sound mark ー), Hangul and Bopomofo
//   - mark: combining marks (Mn, Mc, Me), dropped without ending a token
//   - conn: the ASCII connectors _ - . / \ : @ '
//   - sep: everything else (spaces, other punctuation, symbols, emoji,
//     private use), which ends a token and is dropped
//
// A run of cjk runes yields its overlapping character bigrams ('记忆注入'
// -> 记忆 忆注 注入), or the character itself when the run is one character
// long ('我'). Japanese kana and Korean Hangul are treated the same way as
// Han: kana runs are unsegmented text, and bigrams of a Hangul word let a
// query find a stem inside an inflected form ('문장입니다' -> 문장 장입 입니
// 니다). A query of one character finds only lone one-character runs, not
// that character inside a longer run.
//
// A run of word runes is a segment. Segments joined by one or more conn
// runes (with no space) form a compound: 'go_build.sh', 'os.path.join',
// 'user@example.com', '2024-01-15'. For each compound, in text order:
//
//  1. the whole compound, folded and with the connectors removed
//     ('ospathjoin'), when it has more than one segment and is at most
//     128 bytes long: it gives exact identifiers and paths a rare term
//     that bm25 ranks high;
//  2. each segment ('os', 'path', 'join'), folded, cut at 128 bytes;
//  3. after each segment with more than one part, its parts: a segment
//     splits at lower→Upper ('parse|Request'), before the last capital of
//     a run of capitals followed by a lowercase letter ('HTTP|Request') and
//     between letters and numbers ('sha|256').
//
// So 'parseHTTPRequest' -> parsehttprequest parse http request, and
// '/usr/local/bin/go_build.sh' -> usrlocalbingobuildsh usr local bin go
// build sh. Compound and parts both being emitted means a query for any
// of them matches, and a query spelled like the original matches all of
// them. CJK and word runs never share a token: '修复DSH的记忆' -> 修复
// dsh 的记 记忆.
//
// Every token consists of letters and numbers that SQLite's unicode61
// tokenizer also treats as token characters (the few runes on which Go's
// newer Unicode tables disagree with SQLite's are classed sep), is valid
// UTF-8, and is never empty. Tokens keeps duplicates (term frequency
// matters to bm25); Terms removes them.
//
// # Queries
//
// A query is tokenized as the text was: recall (sqlstore) probes the index
// with one MATCH Quote(term) per term of Terms(query) and joins the rarest
// with AND to gather candidates. Since compounds, segments and parts are
// all tokens, a row written "/usr/local/bin/go_build.sh" is found by the
// query "go_build.sh" through go, build and sh, and "parseHTTPRequest" by
// "parseHTTP" through parse and http, although neither holds the query's
// own compound token. A bigram is a single FTS5 token, so a quoted bigram
// needs no phrase or NEAR logic. highlight() and snippet() on the
// pre-tokenized column mark tokens, not the original text: build snippets
// from the original.
package tokenize
