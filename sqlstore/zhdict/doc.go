// Package zhdict segments Chinese text into dictionary words and tells
// how common a word or character is in general Chinese text. Recall uses
// it where a small index cannot tell rarity by itself: in 85 memories a
// word held by one row has the same idf whether it is 一起 or 捉迷藏.
//
// # Data (words.txt.gz, embedded)
//
// Derived from jieba's dictionary, jieba.dict.utf8 as shipped in the npm
// package segment-dict 2.3.210 (dict/nodejieba/jieba.dict.utf8; package
// licence ISC, jieba itself MIT): every entry made of 1 to 4 Han
// characters (U+4E00..U+9FFF) whose count is at least 5, plus every
// single character whatever its count. 134,688 entries, gzip -9 with a
// zero mtime, 694,690 bytes. Layout: the format of sqlstore/wordfreq,
//
//	word SP count LF
//
// sorted by the bytes of the word; count is jieba's corpus count. The
// table is read once, on first use (about 20 ms and 2.5 MB: its text,
// the offsets of its lines, and the character shares), so a process that
// never sees Chinese text never pays for it.
//
// # Model
//
// p(w) = count(w) / Σ counts. WordInfo is −ln p(w). Character shares
// count each character of each entry, weighted by the entry's count.
// Segment is jieba's maximum-probability path over the word DAG (no HMM
// for unknown words): a character no entry covers stands alone with
// p = 0.5 / Σ counts.
package zhdict
