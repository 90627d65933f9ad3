// Package bench measures the engine on synthetic data: the log alone
// (BenchLog), intake with its fold (BenchIngest) and recall over a large
// root (BenchRecall), with a seeded generator of mixed English, Chinese
// and code chatter (Synth) so every run sees the same events.
//
// `dshmem bench` prints what these return; the figures in README.md come
// from it.
package bench
