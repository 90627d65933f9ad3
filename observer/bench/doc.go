// Package bench measures the engine on synthetic data: the log alone
// (BenchLog), intake with its fold (BenchIngest), recall over a large
// root (BenchRecall), a real server driven by concurrent sessions over
// loopback (BenchServe) and one remember per call against a server
// process (BenchRemember), with a seeded generator of mixed English,
// Chinese and code chatter (Synth) so every run sees the same events.
// Every latency quantile is read one way (percentile, latency.go).
//
// `dshmem bench` prints what these return; the figures in README.md come
// from it.
package bench
