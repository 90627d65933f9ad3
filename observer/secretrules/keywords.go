package secretrules

// Matcher finds which of a fixed list of keywords occur in a text, in one
// pass over its bytes (Aho–Corasick). Every rule names keywords, one of
// which each of its matches contains, so a text is scanned once and only
// the rules whose keywords it holds run their regular expressions. With
// about 300 keywords that is far cheaper than 300 substring searches.
type Matcher struct {
	// class maps a byte to its column; 0 is every byte no keyword holds.
	class   [256]uint8
	classes int
	// next is the DFA: next[state*classes+class]; state 0 is the root.
	next []int32
	// out lists, per state, the keywords that end there (its own and
	// those of its suffix states).
	out [][]int32
}

func NewMatcher(keywords []string) *Matcher {
	m := &Matcher{classes: 1}
	for _, k := range keywords {
		for i := 0; i < len(k); i++ {
			if m.class[k[i]] == 0 {
				m.class[k[i]] = uint8(m.classes)
				m.classes++
			}
		}
	}
	// Build the trie.
	type node struct {
		child map[uint8]int32
		fail  int32
		out   []int32
	}
	nodes := []node{{child: map[uint8]int32{}}}
	for ki, k := range keywords {
		cur := int32(0)
		for i := 0; i < len(k); i++ {
			c := m.class[k[i]]
			nx, ok := nodes[cur].child[c]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, node{child: map[uint8]int32{}})
				nodes[cur].child[c] = nx
			}
			cur = nx
		}
		nodes[cur].out = append(nodes[cur].out, int32(ki))
	}
	// Breadth first: failure links, then the full transition table.
	m.next = make([]int32, len(nodes)*m.classes)
	queue := []int32{}
	for c := 1; c < m.classes; c++ {
		if nx, ok := nodes[0].child[uint8(c)]; ok {
			nodes[nx].fail = 0
			m.next[c] = nx
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		nodes[s].out = append(nodes[s].out, nodes[f].out...)
		for c := 1; c < m.classes; c++ {
			if nx, ok := nodes[s].child[uint8(c)]; ok {
				nodes[nx].fail = m.next[int(f)*m.classes+c]
				m.next[int(s)*m.classes+c] = nx
				queue = append(queue, nx)
			} else {
				m.next[int(s)*m.classes+c] = m.next[int(f)*m.classes+c]
			}
		}
	}
	m.out = make([][]int32, len(nodes))
	for i := range nodes {
		m.out[i] = nodes[i].out
	}
	return m
}

// Each calls fn for every occurrence of a keyword in text, with the
// offset just past it.
func (m *Matcher) Each(text string, fn func(keyword, end int)) {
	state := int32(0)
	for i := 0; i < len(text); i++ {
		c := m.class[text[i]]
		if c == 0 {
			state = 0
			continue
		}
		state = m.next[int(state)*m.classes+int(c)]
		for _, k := range m.out[state] {
			fn(int(k), i+1)
		}
	}
}
