// Package madial loads the MADial-Bench memory-recall benchmark and scores
// rankings of it, so dshmem's retrieval can be measured against the
// published embedding baselines with one metric code path.
//
// Bench is 'dshmem eval madial': it ranks every case with dshmem's own
// recall path (each user's memories folded by the projector into a fresh
// index, as ingest would fold them), optionally the sentence encoder, a
// lexical floor, and the published baselines. Folding is why this package,
// alone under sqlstore, imports events and projector: it is a benchmark
// harness above the store, and nothing in the engine imports it.
//
// MADial-Bench (He et al., NAACL 2025; github.com/hejunqing/MADial-Bench,
// MIT licence) pairs two children's memory archives with 160 dialogues in
// which an assistant should recall one of them. Per dialogue the task is:
// given the dialogue up to its first test turn, rank that user's memories.
//
// # Files (JSON lines: one object per line, not a JSON array)
//
// MADial-Bench-zh-memory.json, 171 lines, one memory each:
//
//	{"1": {"time": "2023-12-25", "scene": "活动类", "emotion": "开心",
//	       "event": "Bart在圣诞节晚会上跳舞，感觉非常开心。", "user-id": 1, "id": "1"}}
//
// The key is the memory id, repeated as a string in "id". Ids are global
// (1..171, unique across users), not per user. user-id 1 is Bart (83
// memories), 2 is Lisa (88). Ids 161..171 exist only in zh.
//
// MADial-Bench-en-memory.json, 160 lines: the same records translated,
// same ids and times, but WITHOUT "user-id" and "id". Load borrows each
// user from the zh file; the result equals upstream's own split of the en
// archive (first 76 lines Bart, the rest Lisa) and agrees with every en
// label.
//
// MADial-Bench-{zh,en}-dialogue.json, 160 lines each:
//
//	{"dialogue": ["<BOD>\n", "<Bart>:\"…\"\n", "<Assistant>:\"…\"\n", …, "<EOD>\n"],
//	 "test-turn": [8], "relevant-id": [1, 78, 105, 113, 108], "user-id": 1, "id": 0}
//
// "id" (zh only) equals the line index; en lines have no id, so a case's
// id is its line index in both languages. "test-turn" lists indexes into
// "dialogue" of the turns (nearly always the assistant's) that should draw
// on memory, 1 to 3 of them; the recall task uses the dialogue BEFORE the
// first one, the concatenation of dialogue[:test_turn[0]], which is
// Case.Query. "relevant-id" (1 to 7 ids, 2.53 on average, no repeats) are
// memories of the dialogue's user, all equally relevant to the scoring.
// zh and en labels differ on dialogues 3, 23, 37, 48, 83, 87, 90 and 91
// (where zh points at its extra memories 161..171, en points at another
// memory) and test turns on 54 (zh [8], en [6 8]) and 67 (zh [6], en [8]).
// Lines of 9 zh dialogues start with a space (" <Bart>:…"); Query keeps it.
//
// baselines-zh/<Model>_zh_top_20_ids.json (Acge, BGE_M3_colbert,
// BGE_M3_dense, Dmeta, Stella, openai), 160 lines each:
//
//	{"id": 0, "user-id": 1, "top_20_ids": [105, 1, 51, …], "relevant_id": [1, 78, 105, 113, 108],
//	 "dialog_history": "<BOD>\n<Bart>:…", "dialogue": [...], "test-turn": [8]}
//
// Rankings are over the dialogue's user's memories only (the candidate set
// Run offers too). Their relevant_id and user-id equal the dialogue file's
// labels on every line, and dialog_history equals Case.Query except on
// case 54, where upstream prefixed "###对话内容：". Upstream embedded each
// memory as the Python repr of {scene, emotion, event}; Memory.Text is the
// event sentence alone, with the other fields kept beside it.
//
// # Metrics
//
// Recall@k is the per-case fraction of relevant ids in the top k, averaged
// over cases. This reproduces the published zh figures (R@10: BGE-M3 dense
// 0.714, Stella 0.740, OpenAI 0.824) and upstream's printed values to
// 1e-9; a hit rate (BGE-M3 0.894) or a pooled fraction (0.640) does not.
// Upstream's nDCG normalizes by the ideal order of the retrieved top k
// only (a list whose few hits lead scores 1 however much it missed);
// Evaluate reports it as NDCGRetrieved to check the paper, and reports
// standard binary nDCG (ideal = min(k, |relevant|) hits first) as NDCG.
package madial
