package recall

import "time"

// Weights are every tunable number of recall and search ranking, in one
// place. A score is a sum of lexical features, each a fraction of the
// query's weight (so scores of different queries are on one scale),
// multiplied by priors:
//
//	lexical = BM25·bm25 + Coverage·coverage + Title·title + Tags·tags
//	        + Terms·terms + Pairs·pairs + Phrase·phrase + Substring·substring
//	score   = lexical × importance × recency × shown × injected
//
// where, with Q the query mass Σ qw(t)·idf(t) over the selected query
// terms (qw: the term's query weight, idf: its rarity in the index):
//
//   - bm25: Σ qw·idf·tf(k1+1)/(tf + k1(1−b+b·dl/avgdl)) / Q. Okapi BM25
//     computed in Go over our tokens (CJK bigrams, word parts) with the
//     query's own term weights, which FTS5's bm25() cannot take.
//   - coverage: the share of Q the document holds at all.
//   - title, tags, terms: the share of Q found in those fields of an entry
//     (a title names what the entry is about; tags and terms were chosen).
//   - pairs: the share of adjacent query token pairs found adjacent in the
//     document: term proximity. For Chinese, two adjacent bigrams are a
//     three-character overlap, so this is also the "longer CJK match"
//     feature.
//   - phrase: 1 when the query's whole token sequence occurs contiguously.
//   - substring: 1 when the normalized query text (case folded, space
//     collapsed) occurs in the normalized document text.
//
// Each default below says why it has that value; the MADial-Bench
// numbers behind them are in doc.go.
type Weights struct {
	// BM25 saturation and length normalization. k1 = 1.2, b = 0.75 are
	// the textbook values; MADial (short memories) was flat for k1 in
	// 0.9..1.6 and b in 0.5..0.9.
	K1, B float64

	BM25      float64 // the workhorse: rare terms, repeated, in short documents
	Coverage  float64 // holding more of the query beats holding one rare term many times
	Title     float64 // a title hit beats a body hit (proof test TitleBeatsBody)
	Tags      float64
	Terms     float64
	Pairs     float64 // proximity: phrase-like runs beat scattered tokens
	Phrase    float64 // the exact phrase, for short queries
	Substring float64 // the exact text, case and spacing aside
	Chars     float64 // BM25 over single Chinese characters (morpheme overlap)
	Words     float64 // BM25 over Chinese dictionary words (zhdict.Segment)

	// Background rarity (zhdict): the idf of a Chinese bigram term (ref
	// 10), word (ref 10) or character (ref 8) that the dictionary knows is
	// multiplied by (info/ref)^X, info its self-information −ln p in
	// general text (0: off). An index of a hundred rows cannot tell 一起
	// from 捉迷藏 when each is held by one row; general text can.
	// NonWord multiplies the idf of a Chinese bigram that is no
	// dictionary word (mostly a word boundary: 上跳 of 晚会上跳舞; 0: off).
	// The character and word features are scaled by the Chinese share of
	// the query mass, so in a mixed query they weigh as its Chinese part.
	TermBg, WordBg, CharBg float64
	NonWord                float64
	// EnglishBg does for an English word (ASCII letters) what TermBg does
	// for a Chinese one, with its self-information in spoken English
	// (enfreq; ref 10: "the" 3.5, "happy" 8, "kite" 13). A word the
	// table does not know, an identifier or a name, counts as rare as its
	// rarest word. 0: off.
	EnglishBg float64

	// StemMatch credits a document token that shares the query token's
	// light English stem ("dancing" ~ "danced") at this fraction of an
	// exact occurrence.
	StemMatch float64

	// Query term weighting. A query is read as lines (a dialogue, a
	// pasted log): line i of L weighs LineDecay^(L−1−i), at least
	// MinLineWeight, so the last turns lead. A term's query weight is
	// 1 − exp(−Σ line weights of its occurrences): once in the last line
	// ≈ 0.63, repeated ≈ 0.86, saturating.
	LineDecay     float64
	MinLineWeight float64

	// MaxQueryTerms bounds the salient terms kept (by qw·idf); more terms
	// cost probes and mostly add noise from long queries.
	MaxQueryTerms int
	// MaxProbeTerms bounds the distinct terms whose rarity is looked up
	// (chosen by query weight first): each probe is one bounded FTS5
	// query.
	MaxProbeTerms int
	// CommonFraction: a term held by more than this fraction of the
	// index is stopword-like: it still scores (with its low idf) but its
	// postings are never enumerated for candidates.
	CommonFraction float64

	// Candidate bounds: each term probe reads at most PerTermCap rowids
	// (newest first); enumeration stops at PoolCap candidates. A corpus
	// of at most SmallCorpus rows is scored whole.
	PerTermCap  int
	PoolCap     int
	SmallCorpus int
	// FetchCap bounds the candidates read and scored in full: when the
	// pool is larger, the rows holding the most query mass as the
	// postings tell are kept (preRank).
	FetchCap int

	// Priors. Importance 0..3 scales by 1 + Importance·(imp−1)/2
	// (importance 1, the default, is neutral). Recency multiplies by
	// 1 + Recency·2^(−age/RecencyHalfLife). Each time an entry was
	// already shown in the session multiplies it by Shown, so repeated
	// recalls rotate. Injected episodes (memory the host showed the
	// model) multiply by Injected: they are echoes, not observations.
	// (They are candidates only with Query.IncludeInjected.)
	Importance float64
	// Confidence (0–1, moved by evidence: tool results after an entry
	// was shown, the user's confirmations and corrections, reuse across
	// sessions) scales an entry by 1 − Confidence·(1 − c): an entry at
	// the default 1 is unchanged, one at 0.3 keeps 0.65 of its score at
	// 0.5. TestConfidenceRanksDown fails at 0 (an entry the evidence spoke
	// against ties with its 1.0 twin) and passes from 0.1 to 1 (a 0.3
	// entry holding the whole query still beats a 1.0 one holding a third
	// of it); 0.5, the middle, is a choice, not a measured optimum: no
	// labelled set of evidence-moved entries exists yet. MADial is the
	// same at every value, since its memories are remembered at the
	// default 1 (`dshmem eval madial`, before and after, in README).
	Confidence      float64
	Recency         float64
	RecencyHalfLife time.Duration
	Shown           float64
	Injected        float64

	// Floors. A result must reach RelFloor × the best score, and either
	// cover AbsCoverage of the query mass or hold AbsIDF of matched
	// idf (about one term held by fewer than 1 in 7 rows).
	RelFloor    float64
	AbsCoverage float64
	AbsIDF      float64

	// ConflictCoverage: a conflict entry is returned only when the query
	// hits it: it covers this share of the query, or holds its exact
	// phrase or text.
	ConflictCoverage float64

	// StaleAfter flags entries not updated for this long "review".
	StaleAfter time.Duration

	// DenseBlend is how far a dense match lifts a document toward the
	// best lexical score (FuseDense), where the query and the documents
	// are English and the encoder is installed; 0 turns fusion off.
	// 1 makes the blend a noisy-OR of the two normalised scores,
	// 1 − (1−lex)(1−dense): no weight to tune, and the middle of a
	// plateau. MADial en, dense top 20 fused with recall's top 20
	// (R@5 / R@10; lexical alone 0.529 / 0.655, R@1 0.316 at every
	// value): 0.3 0.560 / 0.676, 0.5 0.580 / 0.715, 0.7 0.606 / 0.736,
	// 0.85 0.620 / 0.743, 1 0.625 / 0.751. Other dense queries at 1:
	// the first 128 pieces of the dialogue (the model's own cut) 0.628 /
	// 0.739, its last line 0.567 / 0.697, its last two 0.618 / 0.735;
	// with the dense lists at 50 instead of 20, ±0.01. Through Find with
	// the index's vectors (fuse.go, every lexical candidate fused, not
	// only the top 20; int8 cosines) at 1: 0.611 / 0.752.
	DenseBlend float64
	// DenseK is how many nearest vectors of the scopes join a recall's
	// candidates: the dense top 20 of the figures above (50: ±0.01).
	DenseK int
	// DenseFloor: a candidate whose normalised dense score reaches it
	// passes the absolute floors (AbsCoverage, AbsIDF) that a candidate
	// sharing no rare word with the query fails; RelFloor still applies
	// to its fused score. Chosen with the floors on (`dshmem eval madial
	// --floors`, MADial en, at most 10 items, each dialogue's last user
	// line as the query, as a packet asks): each step down shows more;
	// 0.7 is the lowest floor where what a step of 0.1 adds is labelled
	// relevant as often as the words' own floored items are (0.148: 1.04
	// of 7.04 per case). The steps from 1 to 0.7 add items 0.37, 0.22,
	// 0.16 labelled; from 0.7 to 0.4, 0.10, 0.07, 0.09. Against off (no
	// dense score passes): R@10 0.508 → 0.597 (0.616 at 0.5, 0.653 at 0),
	// R@5 0.458 → 0.513, items shown 7.04 → 7.92; and where nothing shown
	// is right, from the user's memories less the labelled ones 7.18 →
	// 8.18 items (9.01 at 0.5, 10 at 0), from another child's 7.04 →
	// 8.19 (9.01, 10). With the whole dialogue as the query the 10 slots
	// are full at every value (9.86–10 items in all three banks) and the
	// floor only picks which: R@10 0.733 at 0.7, 0.747 at 0.5, 0.752 at
	// 0 (and without floors), 0.687 off. No absolute cosine floor would
	// do better: a case's best unlabelled memory is as near its dialogue
	// as its best labelled one (medians 0.415, 0.399). madial's
	// TestDenseFloorFigures pins the rows at 0.7 and off (R@k, items
	// shown in each bank) and TestNoCosineFloorSeparates the medians; the
	// other values and the step figures come from the sweep `dshmem eval
	// madial --floors 0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1,off`, which
	// no test runs (88 s).
	DenseFloor float64
}

// DefaultWeights are the weights Recall uses when the query sets none.
var DefaultWeights = Weights{
	K1: 1.2, B: 0.75,

	DenseBlend: 1,
	DenseK:     20,
	DenseFloor: 0.7,

	BM25:      1.0,
	Coverage:  0.8,
	Title:     0.5,
	Tags:      0.3,
	Terms:     0.3,
	Pairs:     0.6,
	Phrase:    0.8,
	Substring: 0.5,
	Chars:     2.0,
	Words:     2.0,

	TermBg:  2,
	WordBg:  1,
	CharBg:  3,
	NonWord: 0.5,

	EnglishBg: 2,

	StemMatch: 0.7,

	LineDecay:     0.5,
	MinLineWeight: 0.25,

	MaxQueryTerms:  48,
	MaxProbeTerms:  96,
	CommonFraction: 0.25,

	PerTermCap:  96,
	PoolCap:     128,
	SmallCorpus: 128,
	FetchCap:    64,

	Importance:      0.15,
	Confidence:      0.5,
	Recency:         0.1,
	RecencyHalfLife: 30 * 24 * time.Hour,
	Shown:           0.5,
	Injected:        0.5,

	RelFloor:    0.1,
	AbsCoverage: 0.15,
	AbsIDF:      2.0,

	ConflictCoverage: 0.5,

	StaleAfter: 180 * 24 * time.Hour,
}
