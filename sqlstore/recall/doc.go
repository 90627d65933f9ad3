// Package recall ranks memories for a query: FTS5 probes of the index
// (sqlstore) yield a bounded candidate set, which is re-ranked in Go with
// the features and weights of weights.go.
//
// It serves `dshmem recall`, `dshmem search` (episodes, no score floor)
// and the server. recall.go holds the query and result types and the
// call (Find); candidates.go the probe and candidate stages; query.go
// reads a query into weighted terms; features.go tokenizes candidates
// and computes their features; pick.go applies priors, floors and the
// cuts; weights.go defines and explains every weight; fuse.go blends in
// a dense ranking. zhdict and enfreq give the rarity of Chinese and
// English words in general text. The shown table (memory/shown events
// folded per session, stream and entry) gives the already-shown penalty.
// Every query runs in sqlstore (corpus.go there); this package writes no
// SQL.
//
// Recall, and search built on it, in four bounded stages:
//
//  1. Read the query (query.go): lines weighted by recency (a dialogue's
//     last turns lead), distinct tokens with saturating query weights,
//     adjacent pairs, and for short queries the phrase and normalized
//     text.
//  2. Probe: for the most salient tokens (at most MaxProbeTerms), one
//     FTS5 query each, `MATCH "t" ORDER BY rowid DESC LIMIT PerTermCap`.
//     It costs O(PerTermCap), never O(df) (FTS5 walks the doclist from
//     its end), and gives both the newest postings and the term's
//     document frequency: exact below the cap, else extrapolated from
//     the rowid span the cap covered. Salient terms are then the top
//     MaxQueryTerms by qw·idf.
//  3. Candidates: a corpus of at most SmallCorpus rows is scored whole;
//     otherwise rows holding the rarest terms together (one AND query),
//     then each non-common term's newest postings, rarest first, until
//     PoolCap. Terms held by more than CommonFraction of the rows are
//     never enumerated. Of a larger pool only FetchCap rows are read:
//     those the postings already read show holding the most query mass
//     (preRank). Rows are fetched by rowid in chunks and tokenized with
//     one reused tokenize.Scanner (no allocation per token).
//  4. Score in Go (Weights), apply priors, floors and the conflict rule,
//     cut by count and bytes.
//
// The clock is read between stages and between chunks; the context
// carries the same deadline into SQLite (modernc interrupts a running
// statement when it expires), so an expired recall returns what it has
// with a note, never an error.
//
// MADial-Bench (dshmem eval madial), what each step gave (zh / en R@10):
// summed idf of shared terms (madial.Lexical) 0.604 / 0.459; first
// version of this ranker (line decay 0.8) 0.598 / 0.519; line decay 0.5
// 0.645 / 0.515; single Chinese characters as a BM25 feature 0.660 /
// 0.515. Flat within ±0.01: k1, b, coverage, pairs, title, tags, stems,
// term caps, recency. Pseudo-relevance feedback (the top 3 documents'
// 20 best other terms as a second query) raised zh R@20 to 0.79 but not
// R@10 and hurt en; it was removed. Background
// rarity from a general word-frequency table (zhdict, from jieba's
// dictionary), each alone (zh R@10; en unchanged): char idf × info^3
// 0.690, term idf × info^2 0.664, non-word bigrams × 0.5 0.677, BM25 over
// dictionary words × 2 with word idf × info 0.675; together 0.688 (R@1
// 0.295 → 0.363, R@20 0.794). Pangu synonym expansion of query words:
// no change (±0.002). Scaling lines of speakers other than the last
// line's by 0.5: en 0.533 but zh 0.670; it was removed.
// The same background rarity for English words from spoken-English
// counts (enfreq, Weights.EnglishBg), en R@10 by exponent: 0.5 0.588,
// 1 0.607, 2 0.651, 3 0.659, 4 0.666 (R@1 0.234 → 0.314 at 2); zh 0.691
// (names and English words in its dialogues). 2 is kept, as for Chinese
// bigrams: the steeper ones differ by noise. Unknown words counted as
// the rarest rather than left alone: ±0.003.
//
// Tried and not adopted (zh / en R@10 against 0.688 / 0.530): related
// words bridged through shared CC-CEDICT glosses, as query or document
// expansion, 0.690-0.706 zh (the best +0.018, about 3 of 160 cases, not
// stacking, a 2.8 MB share-alike table and +53 MB); WordNet synonyms and
// hypernyms, en ±0.02 with R@5 down 0.01; WordNet supersense classes
// (pizza ~ picnic through noun.food), zh R@20 0.83 but R@10 flat. The
// misses left are memories related by situation, not by words (how to
// celebrate → the ice cream shop); dictionaries do not hold those.
//
// A sentence encoder (sqlstore/encoder, English only) reaches them on
// MADial en: alone R@10 0.650, fused with this ranking by FuseDense
// (fuse.go; the blend weights tried are in weights.go, DenseBlend)
// 0.751, R@5 0.529 → 0.625, R@1 unchanged; zh untouched. Inside Find
// (Query.Dense: the index's int8 vectors, found by sqlstore/vectors'
// sign scan, DenseK of them joining the candidates, the fused score put
// back on the lexical scale) R@10 0.752, R@5 0.611, R@1 0.316
// (TestRecallWithVectors); zh ranks as without the model.
package recall
