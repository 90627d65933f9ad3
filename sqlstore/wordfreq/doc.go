// Package wordfreq reads the word-count tables that recall embeds
// (sqlstore/zhdict, sqlstore/enfreq) and looks words up in them without
// building a map: a table is its decompressed text plus the offsets of
// its lines, searched by binary search. Reading one costs a few
// milliseconds and about its own size in memory.
//
// # Format
//
// gzip of UTF-8 text, one entry per line:
//
//	word SP count LF
//
// count is a positive decimal integer; words are unique and the lines are
// sorted by the bytes of the word (LC_ALL=C sort). Parse checks all of it.
package wordfreq
