package observer_test

import (
	"fmt"
	"testing"

	"dshmem/events"
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

// BenchmarkRedactEnvelope redacts the data of the events of a synthetic
// ingest, as intake does for every event after validation: a message, a
// tool call with nested arguments, a tool result with escapes.
func BenchmarkRedactEnvelope(b *testing.B) {
	synth := bench.NewSynth(7)
	data := make([][]byte, 512)
	for i := range data {
		switch i % 3 {
		case 0:
			data[i] = fmt.Appendf(nil, `{"text":%q}`, synth.Text(300))
		case 1:
			data[i] = fmt.Appendf(nil, `{"tool":"bash","args":{"command":%q,"timeout":120,"env":{"HOME":"/home/u"}},"callId":"c%d"}`, synth.Text(80), i)
		default:
			data[i] = fmt.Appendf(nil, `{"callId":"c%d","output":%q,"exitCode":0}`, i, synth.Text(200)+"\n\tline two\n")
		}
	}
	r := observer.NewRedactor()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e := events.Envelope{Data: data[i%len(data)]}
		if _, err := r.Envelope(&e); err != nil {
			b.Fatal(err)
		}
	}
}
