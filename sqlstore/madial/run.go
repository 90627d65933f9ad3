package madial

// Retriever ranks a user's memories for a case.
type Retriever interface {
	// Rank returns at most k ids from candidates, best first.
	Rank(c Case, candidates []Memory, k int) []int
}

// Run ranks every case with r, offering as candidates the memories of the
// case's user in file order (as upstream does: each user has a separate
// archive), and returns case id -> ranked ids for Evaluate.
func Run(r Retriever, memories []Memory, cases []Case, k int) map[int][]int {
	byUser := make(map[int][]Memory)
	for _, m := range memories {
		byUser[m.UserID] = append(byUser[m.UserID], m)
	}
	out := make(map[int][]int, len(cases))
	for _, c := range cases {
		ids := r.Rank(c, byUser[c.UserID], k)
		if len(ids) > max(k, 0) {
			ids = ids[:max(k, 0)]
		}
		out[c.ID] = ids
	}
	return out
}
