// Package vectors keeps the sentence encoder's vectors of English entries
// and episodes: Fill encodes what the index holds without one (in the
// background, after the text is acknowledged), and Dense finds the
// nearest vectors of a query for recall to fuse with its lexical ranking.
//
// # A projection of the index
//
// A vector is made from a row of the index (an active or conflict entry's
// current text, an episode's text), never from an event, so the fold
// stays as it was and a root without the model is exactly as before.
// Rows live in the index's vectors table (migrations/00012_vectors.sql)
// with the model's id and version; `dshmem replay` rebuilds them when the
// model is installed, and a row of another model version is dropped,
// never scanned. Removing the model leaves the log alone: the rows stay
// until the index is rebuilt, unread. Only English text gets a vector
// (encoder.English); an entry whose text is not gets a row without one,
// so it is not looked at again until its version changes. Entries that
// stop being active or conflict (forgotten, superseded) lose their row at
// the next Fill; a scope's purge deletes its rows with the rest of the
// scope; a scrub rebuilds the index, which starts without any.
//
// The encoder's forward pass is deterministic on one architecture (fixed
// summation order, no goroutine inside a sum) and the quantisation below
// is a pure function of its bits, so a replayed index holds the same
// rows, byte for byte (TestReplayVectorsEqual).
//
// # Stored and scanned
//
// A vector is stored quantised: code[i] = round(v[i]/scale) as int8,
// scale = max|v[i]|/127 (512 bytes and a float, a quarter of float32).
// Its cosine with a query q is scale·Σ q[i]·code[i], within about 1e-3 of
// the float32 cosine. A process keeps, per index and kind, one bit per
// dimension of each vector (the sign: 64 bytes) with its rowid and scope,
// loaded once and topped up from the rows added since (vector_state's
// epoch and per-kind delete counts tell it when to load again). A query
// scans those bits by Hamming distance (XOR and POPCNT, eight words a
// vector), keeps the Rerank nearest of its scopes, reads their int8
// codes from the index and ranks them by the cosine above.
package vectors
