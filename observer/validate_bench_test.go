package observer_test

import (
	"fmt"
	"testing"

	"dshmem/observer"
	"dshmem/observer/bench"
)

// BenchmarkValidate validates the lines of a synthetic ingest, as intake
// does for every event it is sent.
func BenchmarkValidate(b *testing.B) {
	synth := bench.NewSynth(7)
	lines := make([][]byte, 512)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"id":"s1:%d","type":"user/message","time":"2026-08-18T10:00:00Z","session":"s1","cwd":"/home/u/proj","data":{"text":%q}}`,
			i, synth.Text(300))
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, lerr := observer.Validate(lines[i%len(lines)], 1); lerr != nil {
			b.Fatal(lerr)
		}
	}
}
