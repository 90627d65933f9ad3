// Package distilleval measures a distiller against the labelled corpus in
// testdata/distill/corpus: precision, recall and F1 per op kind and per
// language, and the confusions.
//
// # Corpus
//
// One case per JSONL line (tune.jsonl, test.jsonl):
//
//	{"id":"test-zh-001","lang":"zh","split":"test","kind":"correction-punct",
//	 "context":{"entries":[{"id":"z-db","type":"fact","title":"…","content":"…"}],
//	            "turns":[{"role":"assistant","text":"…"}]},
//	 "utterance":{"role":"user","text":"不是 MySQL，而是 PostgreSQL 16，…"},
//	 "expect":[{"op":"supersede","target":"z-db","type":"fact"}]}
//
// A turn's or the utterance's role is user, assistant or tool; "injected":
// true marks a user-role message the host put there. An empty expect means
// a careful person would write nothing.
//
// # How a case is fed
//
// As a checkpoint feeds a distiller (observer/checkpoint): the turns and
// the utterance are the Request's messages, seq 1…n+1, event ids
// "<case id>:<seq>"; the claimed range is the utterance alone (From = To
// = n+1), so the turns are context and nothing is learnt from them. The
// entries are active entries of the request's stream, and Related is
// distill.SelectRelated over all of the messages. The distiller's answer
// goes through distill.Validate, as before any write; what Validate keeps
// is what is scored (an add it turns into a revise counts as a revise, a
// supersede it cannot verify counts as a conflict).
//
// # How an op matches
//
// A got op matches an expected op when their kinds are equal and, for an
// add, their types are equal; for revise, supersede, conflict and forget,
// their targets are equal (the type of those is not compared). Each
// expected op takes the first unmatched got op that matches it, in answer
// order. Per op kind: a matched pair is a true positive, a got op left
// unmatched a false positive, an expected op left unmatched a false
// negative; so an add of the wrong type is one of each. The "nothing" row
// counts cases: a case that expects no op and gets none is a true
// positive, one that gets some op a false negative, and a case that
// expects ops but gets none a false positive. "all ops" sums the op kinds.
// Precision is TP/(TP+FP), 1 when there is no got op; recall TP/(TP+FN),
// 1 when nothing was expected; F1 their harmonic mean, 0 when both are 0.
//
// # Recorded answers
//
// The openai distiller is run against NewReplayServer, a fake
// OpenAI-compatible endpoint on loopback that answers each request from a
// file of recorded answers, keyed by the request's session (the case id)
// and checked against the utterance the request carries; a request it has
// no answer for gets a 404 naming the case.
package distilleval
