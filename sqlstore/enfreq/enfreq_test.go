package enfreq

import "testing"

func TestLoadReadsEveryEntry(t *testing.T) {
	// doc.go: 60,384 distinct words; a table that failed to decompress
	// would hold none.
	if n := Load(); n != 60_384 {
		t.Errorf("Load() = %d words, want 60,384", n)
	}
}

func TestWordInfo(t *testing.T) {
	the, ok1 := WordInfo("the")
	kite, ok2 := WordInfo("kite")
	if !ok1 || !ok2 {
		t.Fatalf("WordInfo: the known %v, kite known %v, want both known", ok1, ok2)
	}
	if the >= kite {
		t.Errorf("WordInfo(the) = %.2f, WordInfo(kite) = %.2f, want the everyday word less informative", the, kite)
	}
	unk, ok := WordInfo("parsehttprequest")
	if ok {
		t.Error("WordInfo(parsehttprequest): known, want unknown")
	}
	if unk < kite {
		t.Errorf("unknown word info %.2f < WordInfo(kite) %.2f, want an unknown word at least as rare as any known one", unk, kite)
	}
}
