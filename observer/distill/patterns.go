package distill

import (
	"regexp"

	"dshmem/events/payload"
)

// pattern is one row of the table in doc.go.
type pattern struct {
	name string // stable id, used in Op.Reason and in the tests
	lang string // "en" | "zh"
	re   *regexp.Regexp
	typ  string // entry type of an add

	// payload is the submatch the title comes from; 0 means the whole
	// statement. titlePrefix goes in front of it ("Prefer ").
	payload     int
	titlePrefix string
	// reject vetoes a match on its payload (a demonstrative, "mind" in
	// "never mind", …): what keeps false positives down.
	reject func(payload string) bool
	// taskScoped rows are not taken from a message that asks for
	// something now ("Answer in one sentence. Do not call tools."): there
	// a "don't" is about the task, not a rule that stays.
	taskScoped bool
	// classify makes the type of an add that of its payload (fix,
	// procedure, architecture or fact: see classify) instead of typ.
	classify bool

	// forget patterns forget the one entry the statement names.
	forget bool

	// correction patterns supersede an existing entry: oldGroup and
	// newGroup are the submatches naming the old and the new thing
	// (oldGroup 0: not said; newGroup 0: the whole statement). oldIsSlot
	// says the old submatch may name what changed ("日志" in "日志改成
	// Loki 了") rather than its old value; slotFallback looks for the
	// entry by the statement's words when neither the old thing nor a
	// sibling of the new one is found. fallbackAdd makes a correction
	// that finds no entry to correct an add of a decision ("改用 pnpm" on
	// a fresh memory); without it the next pattern is tried.
	correction         bool
	weakCue            bool // only a time word marks the change: not taken from what the user is doing (activityRe)
	oldGroup, newGroup int
	oldIsSlot          bool
	slotFallback       bool
	fallbackAdd        bool

	importance int
}

// Old-thing and sub-phrase shapes shared by several rows.
const (
	enOld = `([^,;.!?—–]{1,40}?)`
	// one word (or a name and its version) after "not" / "不是".
	enOldWord = `([A-Za-z0-9][\w.+/-]*(?:\s+\d[\w.]*)?)`
	zhOld     = `([^，,。；;、\s][^，,。；;、]{0,29}?)`
	zhOldWord = `([A-Za-z0-9][\w.+/-]*(?:\s+\d[\w.]*)?|\p{Han}{1,6})`
)

// Regexps are matched against one statement with its leading fillers
// removed (see split); the English ones are case-insensitive. The first
// row that matches and is not vetoed decides; a correction that finds no
// entry and has no fallbackAdd lets the next row try.
var patterns = []pattern{
	// Forgetting comes first: "forget that we use vim" forgets.
	{name: "en-forget", lang: "en", forget: true,
		re: regexp.MustCompile(`(?i)^(?:please\s+|you\s+can\s+|just\s+)?forget\s+(?:about\s+)?(?:what\s+i\s+said\s+about\s+|that\s+|the\s+(?:memory|memories|note|notes|entry|entries|record|thing|bit|part)\s+(?:about\s+|that\s+says\s+|saying\s+|on\s+|that\s+)?)?(\S.*)$`)},
	{name: "en-delete-note", lang: "en", forget: true,
		re: regexp.MustCompile(`(?i)^(?:please\s+|you\s+can\s+|just\s+)?(?:delete|remove|drop|erase|discard)\s+(?:the|that|this|your)\s+(?:memory|memories|note|notes|entry|entries|record)\s+(?:about\s+|that\s+says\s+|saying\s+|on\s+|that\s+)?(\S.*)$`)},
	{name: "en-forget-it", lang: "en", forget: true, payload: 1,
		re: regexp.MustCompile(`(?i)^(\S.*?)\s*[,;—–-]+\s*(?:just\s+)?forget\s+(?:it|that|about\s+it)\b`)},
	{name: "zh-忘掉那条", lang: "zh", forget: true,
		re: regexp.MustCompile(`(?:那条|这条|那一条|这一条|记忆|记录).*?(?:忘|删|不用记|去掉)|(?:忘掉|忘了|忘记|删掉|删了|删除|去掉)[^，。]*?(?:那条|这条|记忆|记录)`)},

	// Corrections come next: "记住：数据库不是MySQL而是PostgreSQL" is a correction.
	{name: "en-not-but", lang: "en", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)\bnot\s+(?:the\s+|a\s+|an\s+)?` + enOld + `\s*,?\s*(?:\bbut\b|—|–|--|;)\s*(?:rather\s+|instead\s+)?(\S.*)$`),
		reject: notNamedThing},
	{name: "en-not-its", lang: "en", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)(?:\bnot|n't|\bdont|\bno\s+longer)\s+(?:on\s+|in\s+|at\s+|using\s+|use\s+)?(?:the\s+)?` + enOld + `(?:\s+any\s?more)?\s*[,;—–]?\s*(?:but\s+)?(?:it's|it’s|its|it\s+is|they're|they\s+are|we're|we\s+are|it|they|we)\s+(?:now\s+)?(\S.*)$`),
		reject: notNamedThing},
	{name: "en-no-longer", lang: "en", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)\bno\s+longer\s+(?:on\s+|in\s+|at\s+|using\s+|use\s+)?(?:the\s+)?` + enOld + `\s*(?:—|–|--|;|,|:)\s*(\S.*)$`),
		reject: notNamedThing},
	{name: "en-not-comma", lang: "en", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)(?:^|[,;:]\s*)not\s+(?:the\s+)?` + enOld + `\s*,\s*(\S.*)$`),
		reject: notNamedThing},
	{name: "en-instead-of", lang: "en", correction: true, oldGroup: 2, newGroup: 1, slotFallback: true, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we\s+|i\s+)?(?:now\s+|should\s+)?use\s+(\S.*?)\s+instead(?:\s+of\s+(\S.*?))?$`)},
	{name: "en-instead-of-first", lang: "en", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^instead\s+of\s+(\S.*?),?\s+(?:we\s+|i\s+)?(?:now\s+)?use\s+(\S.*)$`)},
	{name: "en-switched-to", lang: "en", correction: true, oldGroup: 1, newGroup: 2, slotFallback: true, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we|i)(?:\s+have|'ve|’ve)?\s+(?:switched|moved|migrated|changed|upgraded)\s+(?:over\s+)?(?:from\s+(\S.*?)\s+)?to\s+(\S.*)$`)},
	{name: "en-from-to", lang: "en", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)\b(?:switched|switch|moved|migrated|changed|upgraded|renamed|ported|went|upgrade|migrate)\b(?:\s+\S+){0,4}?\s+(?:away\s+)?(?:from|off(?:\s+of)?|out\s+of)\s+(\S.*?)\s+(?:to|onto|for|into)\s+(\S.*)$`)},
	{name: "en-replaced-by", lang: "en", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(\S.*?)\s+(?:was|were|has\s+been|have\s+been|got|is|are)\s+(?:replaced|superseded|swapped\s+out)\s+(?:by|with|for)\s+(\S.*)$`)},
	{name: "en-replaced-with", lang: "en", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)\b(?:replaced|swapped|dropped|ditched|abandoned)\s+(\S.*?)\s+(?:with|for|by|in\s+favou?r\s+of)\s+(\S.*)$`)},
	{name: "en-y-replaced-x", lang: "en", correction: true, oldGroup: 2, newGroup: 1, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(\S.*?)\s+(?:has\s+)?(?:replaced|superseded|took\s+over\s+from)\s+(?:the\s+)?` + enOldWord)},
	{name: "en-deprecated", lang: "en", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, slotFallback: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(\S.*?)\s*(?:is|are|was|were|has\s+been|have\s+been|got|'s|’s)\s+(?:now\s+)?(?:deprecated|decommissioned|retired|gone|dead|obsolete|outdated|removed|sunset|turned\s+off|shut\s+down)\b[\s,;:—–-]*(?:here\s*[,;:—–-]*\s*)?(.*)$`)},
	{name: "en-these-days", lang: "en", correction: true, newGroup: 1, slotFallback: true, typ: payload.TypeFact, importance: 2,
		re: regexp.MustCompile(`(?i)^(\S.*?)\s*,?\s+(?:these\s+days|nowadays)$`)},
	{name: "en-reversed", lang: "en", correction: true, oldGroup: 2, newGroup: 1, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?i)^(?:it's\s+|it\s+is\s+|we're\s+on\s+|we\s+are\s+on\s+|we\s+use\s+|use\s+)?(\S.*?)\s*,?\s+(?:and\s+)?(?:not|rather\s+than|instead\s+of)\s+(?:the\s+|on\s+|in\s+)?` + enOldWord),
		reject: notNamedThing},
	{name: "en-moved-to", lang: "en", correction: true, newGroup: 1, slotFallback: true, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)\b(?:switched|moved|migrated|changed|upgraded|ported)\b(?:\s+\S+){0,4}?\s+(?:over\s+)?(?:to|onto)\s+(\S.*)$`)},
	{name: "en-is-now", lang: "en", correction: true, newGroup: 1, slotFallback: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)\b(?:is|are)\s+now\s+(?:called\s+|on\s+|in\s+|at\s+|using\s+)?(\S.*)$`)},
	{name: "en-now-runs", lang: "en", correction: true, newGroup: 1, slotFallback: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)\bnow\s+(?:runs?|lives?|uses?|goes|go|sits?)\s+(?:on\s+|in\s+|at\s+|through\s+|to\s+)?(\S.*)$`)},
	{name: "en-actually", lang: "en", correction: true, slotFallback: true, typ: payload.TypeFact, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:hmm+,?\s*|no,?\s*|wait,?\s*|oh,?\s*|sorry,?\s*)?(?:actually(?:\s+scratch\s+that)?|(?:small\s+|quick\s+|minor\s+|one\s+)?correction|in\s+fact|to\s+be\s+precise|scratch\s+that|i\s+was\s+wrong|my\s+bad|i\s+misspoke|that's\s+(?:wrong|not\s+right|not\s+true|no\s+longer\s+true|outdated|out\s+of\s+date)|that\s+is\s+(?:wrong|outdated|no\s+longer\s+true))\b\s*[,:;—–-]*\s*(\S.*)$`)},

	{name: "en-now", lang: "en", correction: true, weakCue: true, slotFallback: true, typ: payload.TypeFact, importance: 2,
		re: regexp.MustCompile(`(?i)^(\S.*\b(?:now|these\s+days|nowadays|anymore)\b.*)$`)},

	{name: "zh-不是而是", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`(?:^|[^是])(?:已经|早就)?(?:不(?:再)?(?:是|在|用|放|存)|没(?:有)?(?:在)?用)\s*` + zhOld + `\s*了?\s*[，,]?\s*(?:而是|是|在|现在是|现在用|我们现在用|现在改用|改用|改放|改存|改成|放在|存在|现在|用的是|用)\s*(\S.*)$`),
		reject: notNamedThing},
	{name: "zh-而不是", lang: "zh", correction: true, oldGroup: 2, newGroup: 1, typ: payload.TypeDecision, importance: 2,
		re:     regexp.MustCompile(`^(\S.*?)\s*了?\s*[，,]?\s*(?:而)?不(?:是|在|要用|用|再是|再用|归|放|再放)\s*` + zhOldWord),
		reject: notNamedThing},
	{name: "zh-替换", lang: "zh", correction: true, oldGroup: 2, newGroup: 1, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?:用|拿)?\s*(\S.*?)\s*(?:替换|替代|取代|代替)了?\s*(?:掉)?\s*(\S.*?)\s*了?$`)},
	{name: "zh-弃用", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, slotFallback: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(\S.*?)\s*(?:已经|早就)?(?:弃用|下线|过时|淘汰|废弃|停用|停掉)了?\s*[，,：:]?\s*(\S.*)$`)},
	{name: "zh-改用", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, slotFallback: true, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?:(?:不用|不再用|别用|不要用|不要再用)\s*(\S.*?)\s*了?\s*[，,]?\s*)?(?:改用|换用)\s*(\S.*)$`)},
	{name: "zh-从X换成Y", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, fallbackAdd: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`从\s*(\S.*?)\s*(?:换成|迁移到|切换到|换到|迁到|改成|改为|升级到|切到)了?\s*(\S.*)$`)},
	{name: "zh-把X换成Y", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`把\s*(\S.*?)\s*(?:都|全)?(?:换成|迁移到|迁到|改成|改为|切换到|切到|升级到)了?\s*(\S.*)$`)},
	{name: "zh-X改成Y", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(\S.*?)\s*(?:已经|都|也|全)?\s*(?:改成|换成|迁移到|迁到|切换到|切到|升级到|改为|换为|改名叫|改名为|换给|交给|转给|挪到|搬到|改归|改由|归到|升到|升级成|换到)了?\s*(\S.*)$`)},
	{name: "zh-现在是", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, oldIsSlot: true, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(\S.*?)\s*现在(?:已经)?(?:是|用|跑在|放在|存在|在|归|叫|改用|用的是|走|换成了)\s*(\S.*)$`)},
	{name: "zh-被取代", lang: "zh", correction: true, oldGroup: 1, newGroup: 2, typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(\S.*?)\s*(?:早就|已经|都)?被\s*(\S.*?)\s*(?:替换|替代|取代|代替|换掉|顶替)了?$`)},
	{name: "zh-已经", lang: "zh", correction: true, weakCue: true, slotFallback: true, typ: payload.TypeFact, importance: 2,
		re: regexp.MustCompile(`^(.*(?:现在|已经|早就|目前|如今).*)$`)},
	{name: "zh-其实", lang: "zh", correction: true, slotFallback: true, typ: payload.TypeFact, importance: 2,
		re: regexp.MustCompile(`(?:其实|实际上|事实上|更正一下|纠正一下|更正|纠正|应该是|说错了|搞错了|记错了|弄错了|不对|错了|已经不对了)\s*[，,：:]?\s*(\S.*)$`)},

	{name: "en-remember", lang: "en", typ: payload.TypeFact, payload: 1, classify: true, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:please\s+)?(?:remember|keep\s+in\s+mind|note)\s*(?:that\s+|[:：,—-]\s*)(\S.*)$`)},
	{name: "en-remember-to", lang: "en", typ: payload.TypeProcedure, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:please\s+)?(?:remember|don't\s+forget)\s+to\s+(\S.*)$`)},
	{name: "zh-记住", lang: "zh", typ: payload.TypeFact, payload: 1, classify: true, importance: 2,
		re:     regexp.MustCompile(`^(?:请|你)?(?:帮我)?(?:记住|记一下|记下|记好|注意)\s*[：:，,]?\s*(\S.*)$`),
		reject: rejectPrefixes("了", "吗", "没")},

	{name: "en-always-never", lang: "en", typ: payload.TypeRule, importance: 2,
		re:      regexp.MustCompile(`(?i)^(?:(?:from\s+now\s+on|going\s+forward)\s*,?\s*)?(?:please\s+)?(?:always|never)\s+(\S.*)$`),
		payload: 0, reject: rejectWords("mind", "again", "heard", "seen", "thought", "knew", "expected", "been")},
	{name: "en-must", lang: "en", typ: payload.TypeRule, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:you|we)\s+(?:(?:must|should)(?:n't|\s+not|\s+never|\s+always)|(?:need|have)\s+to\s+always)\s+(\S.*)$`)},
	{name: "en-dont", lang: "en", typ: payload.TypeRule, importance: 2, taskScoped: true,
		re:     regexp.MustCompile(`(?i)^(?:please\s+)?(?:don't|don’t|do\s+not|dont)\s+(?:ever\s+)?(\S.*)$`),
		reject: rejectWords("worry", "know", "think", "remember", "care", "bother", "mind", "forget", "get", "understand", "see", "have", "need", "want", "like", "be")},
	{name: "en-make-sure", lang: "en", typ: payload.TypeRule, importance: 2, taskScoped: true,
		re: regexp.MustCompile(`(?i)^(?:please\s+)?(?:make\s+sure|be\s+sure|ensure)\s+(?:to\s+|that\s+|you\s+)?(?:always\s+)?(\S.*)$`)},
	{name: "zh-从现在起", lang: "zh", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(?:从现在起|从现在开始|从今以后|从今天起|从今天开始)\s*[，,]?\s*(\S.*)$`)},
	{name: "zh-以后都用", lang: "zh", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`^(?:以后|今后|从现在起|从今以后|往后|统一)\s*[，,]?\s*(\S{0,10}?(?:都|一律|统一|就)?\s*(?:用|使用|采用|走|放在|放到|手写|写).*)$`)},
	{name: "zh-必须不要禁止", lang: "zh", typ: payload.TypeRule, importance: 2,
		re: regexp.MustCompile(`(?:^|[^不])(?:必须|务必|不要|不许|不准|禁止|千万不要|千万别|永远不要|一定要|绝对不能|绝对不要|绝不能|严禁|不得|一律要|都必须|都要求)\s*(\S.*)$`),
		// A rule holds beyond today: "必须今天修好" is a request, not a rule.
		reject: rejectPrefixes("紧", "了", "客气", "担心", "着急", "急", "今天", "现在", "马上", "立刻", "这次", "这个", "这里")},

	{name: "en-decided", lang: "en", typ: payload.TypeDecision, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we|i|the\s+team|everyone|we\s+all)(?:\s+have|'ve|’ve)?\s+(?:decided|agreed|settled|chose|picked|opted)\s+(?:to\s+|that\s+|on\s+|for\s+)?(\S.*)$`)},
	{name: "en-lets", lang: "en", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:let's|we're|we\s+are|we'll|we\s+will)\s+(?:go(?:ing)?\s+with|use|standardi[sz](?:e|ing)\s+on|stick(?:ing)?\s+with|adopt(?:ing)?|keep(?:ing)?)\s+(\S.*)$`)},
	{name: "en-decision-is", lang: "en", typ: payload.TypeDecision, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^the\s+(?:decision|plan|consensus)\s+is\s+(?:to\s+|that\s+)?(\S.*)$`)},
	{name: "en-from-now-on", lang: "en", typ: payload.TypeDecision, payload: 1, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)\s*,?\s+(?:we(?:'ll|’ll|\s+will)\s+)?(\S.*)$`)},
	{name: "en-from-now-on-end", lang: "en", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?i)^(?:we(?:'ll|’ll|\s+will)\s+)?(\S.*?)\s*,?\s+(?:from\s+now\s+on|going\s+forward|from\s+here\s+on)$`)},
	{name: "zh-决定", lang: "zh", typ: payload.TypeDecision, importance: 2,
		re: regexp.MustCompile(`(?:决定|定了|定下来|就定|商定|商量好了|说好了|就选|就用|选定|敲定|拍板)了?\s*[：:，,]?\s*(\S.*)$`)},

	{name: "en-prefer", lang: "en", typ: payload.TypePreference, payload: 1, titlePrefix: "Prefer ", importance: 1,
		re:     regexp.MustCompile(`(?i)^(?:personally,?\s+)?i(?:'d|’d|\s+would|\s+really|\s+generally|\s+usually|\s+always|\s+personally|\s+strongly)*\s+prefer\s+(\S.*)$`),
		reject: rejectWords("this", "that", "it", "these", "those", "the first", "the second", "the former", "the latter", "yours", "your")},
	{name: "en-like", lang: "en", typ: payload.TypePreference, importance: 1,
		re:     regexp.MustCompile(`(?i)^(?:personally,?\s+)?i(?:'d|’d|\s+would|\s+really|\s+generally|\s+usually|\s+personally|\s+much)*\s+(?:like|love|rather|favou?r|don't\s+like|dislike|hate)\s+(\S.*)$`),
		reject: rejectWords("this", "that", "it", "these", "those", "to know", "yours", "your", "you", "him", "her", "them")},
	{name: "en-my-preference", lang: "en", typ: payload.TypePreference, payload: 1, importance: 1,
		re: regexp.MustCompile(`(?i)^my\s+(?:personal\s+)?(?:preference|taste|habit)\s*(?:is|:)\s*(\S.*)$`)},
	{name: "zh-喜欢偏好习惯", lang: "zh", typ: payload.TypePreference, importance: 1,
		re:     regexp.MustCompile(`(?:^|[，,]\s*)我(?:比较|更|一般|通常|平时|个人|还是|真的|特别)*(?:喜欢|偏好|偏爱|习惯|倾向于|倾向|不喜欢|宁愿|宁可|希望)\s*(\S.*)$`),
		reject: rejectPrefixes("这", "那", "你", "它", "他", "她")},
}
