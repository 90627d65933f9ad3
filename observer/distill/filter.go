package distill

import (
	"regexp"
	"strings"
)

// What the rules distiller leaves out of a user message before it looks
// for statements, and the statements it leaves alone: see "What is not
// learnt" in the package documentation. Each drop keeps the rest of the
// message verbatim (a dropped region becomes a line end), so a statement
// found in what is left is still verbatim text of the message.

var (
	// A fenced block, closed or running to the end of the message.
	fenceRe = regexp.MustCompile("(?s)```.*?(?:```|$)|~~~.*?(?:~~~|$)")
	// A block between a tag and its closing tag: text a host or a plugin
	// wrapped (<system-reminder>, <memory>, <context>…).
	tagBlockRe = regexp.MustCompile(`(?s)<([A-Za-z][\w-]*)(?:\s[^>]*)?>.*?</([A-Za-z][\w-]*)>`)
	// Lines that are quoted, code or log output rather than the user's words.
	pastedLineRe = regexp.MustCompile(`^(?:>|    |\t|\s*(?:\[?\d{4}-\d{2}-\d{2}[ T]\d|\d{2}:\d{2}:\d{2}\b|(?:ERROR|WARN|WARNING|INFO|DEBUG|FATAL|TRACE|CRITICAL)\b|npm (?:ERR|WARN)!|\$ |# |at [\w.$]+\(|Traceback \(|File "|Caused by:|[\w.]*(?:Error|Exception)\b:|panic:|goroutine \d+|错误[：:]|警告[：:]|报错[：:]))`)
	// Headers of memory a host shows back inside a message; the header
	// line and the list under it are dropped.
	injectedHeaderRe = regexp.MustCompile(`(?i)^\s*(?:#+\s*(?:memory|memories|记忆|相关记忆)\s*$|relevant\s+memor(?:y|ies)\s*[:：]|(?:context|memory)\s+from\s+(?:the\s+)?(?:previous|last|earlier)\s+sessions?\s*[:：]|相关记忆[：:]|上次会话(?:的上下文)?[：:]|以下是(?:相关)?记忆)`)
	listItemRe       = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s`)
)

// userWords returns text with pasted and injected parts blanked out.
func userWords(text string) string {
	blank := func(s string) string { return strings.Repeat("\n", max(1, strings.Count(s, "\n"))) }
	text = fenceRe.ReplaceAllStringFunc(text, blank)
	text = tagBlockRe.ReplaceAllStringFunc(text, func(s string) string {
		m := tagBlockRe.FindStringSubmatch(s)
		if m[1] != m[2] {
			return s
		}
		return blank(s)
	})
	lines := strings.Split(text, "\n")
	inInjected := false
	for i, l := range lines {
		switch {
		case injectedHeaderRe.MatchString(l):
			lines[i], inInjected = "", true
		case inInjected && listItemRe.MatchString(l):
			lines[i] = ""
		case pastedLineRe.MatchString(l):
			lines[i], inInjected = "", false
		default:
			inInjected = false
		}
	}
	return strings.Join(lines, "\n")
}

// Statement filters. Each regexp is matched against one statement (see
// split), English ones case-insensitively.
var (
	questionEN = regexp.MustCompile(`(?i)^(?:what|why|how|which|who|whom|whose|when|where|is|are|am|was|were|does|did|can|could|should|would|will|shall|has|have|isn't|aren't|doesn't|didn't|won't|do\s+(?:we|you|i|they))\b`)
	questionZH = regexp.MustCompile(`(?:^|[^不])是不是|能不能|要不要|有没有|会不会|(?:^|[^不])对不对|可不可以|行不行|为什么|为啥|怎么|怎样|哪个|哪些|哪里|哪儿|多少|多久|什么|来着|到底|是\s*\S+\s*还是|[吗呢嘛]$`)

	hypotheticalEN = regexp.MustCompile(`(?i)^(?:what\s+if|if|suppose|supposing|say\s+we|imagine|hypothetically|assuming|in\s+case|unless|whether)\b|\bwhat\s+if\b|\bwould\s+it\b|\bwe\s+could\b|\bmaybe\s+we\s+should\b|\bat\s+some\s+point\b|\bone\s+day\b|\bsomeday\b|\beventually\b|\bin\s+the\s+future\b`)
	hypotheticalZH = regexp.MustCompile(`如果|假如|假设|假使|要是|万一|倘若|的话|试试|考虑一下|是否|将来|说不定|以后可以|可以考虑|或许可以|不如|哪天|有朝一日`)

	jokeEN = regexp.MustCompile(`(?i)\blol\b|\blmao\b|\brofl\b|\bhaha|\bhehe|(?:^|\s)/s(?:\s|$)|\bjk\b|just\s+kidding|what\s+could\s+(?:possibly\s+)?go\s+wrong|totally\s+fine|yeah\s+right|works\s+out\s+great|[🙃🙄😂🤣😏😜😆]|^(?:sure|yeah|oh\s+great|great|right),\s+let's\b`)
	jokeZH = regexp.MustCompile(`哈哈|呵呵|嘿嘿|开玩笑|开个玩笑|逗你|反正也不会|反正每次都|(?:^|\s)/s(?:\s|$)|[🙃🙄😂🤣😏😜😆]|^对对对|^行吧|真开心|算了吧`)

	otherProjectEN = regexp.MustCompile(`(?i)\b(?:my|our|his|her|their)\s+(?:side|other|previous|old|last|personal|former)\s+(?:project|repo|repository|job|company|team|employer|work)\b|\bat\s+(?:my|our)\s+(?:old|previous|last|former)\s+(?:job|company|work|employer)\b|\bmy\s+(?:friend|colleague|coworker|brother|sister)'?s\b|\bthe\s+other\s+(?:repo|repository|project|team)\b|\bnot\s+this\s+one\b|\banother\s+(?:project|repo|repository|team|company)\b|\bprevious\s+(?:company|job|employer)\b|\b(?:other|another)\s+(?:service|services|codebase|app|product|system)\b|\bthat's\s+unrelated\b|\bunrelated\s+to\s+this\b`)
	otherProjectZH = regexp.MustCompile(`另一个(?:项目|仓库|工程|团队|服务|系统|产品)|别的(?:项目|仓库|团队|公司)|其他(?:项目|仓库)|上家公司|上一家公司|上一份工作|以前的公司|之前的公司|前公司|朋友|不是这个[）)]|（不是这个|跟这个没关系|和这个没关系|与本项目无关`)

	// What the user says they did not say or mean, and changes they say
	// will not happen.
	notSaidEN  = regexp.MustCompile(`(?i)\b(?:never\s+said|didn't\s+say|did\s+not\s+say|not\s+saying|i'm\s+not\s+suggesting|not\s+suggesting)\b|(?:\bnot|n't|\bno\s+need\s+to|\bwon't)\s+(?:\w+\s+){0,3}?(?:switch|switching|move|moving|migrate|migrating|replace|replacing|drop|dropping|upgrade|upgrading|leave|leaving)\b`)
	notSaidZH  = regexp.MustCompile(`没说过|没有说过|不是说|并没有说|没让|(?:不会|没必要|不打算|不想|不准备|还没|暂时不|先不|不急着|没有)[^，。,]{0,8}?(?:换|迁|改|切|升级)`)
	reportedEN = regexp.MustCompile(`(?i)\b(?:says?|said|wrote|writes|quotes?|quoted|quoting|docs?|readme|handbook|message|ticket|comment)\b[^"“‘「]{0,40}(?:["“‘「]|[\s:：]')|\b(?:says?|said|wrote|writes)\s*[:：]?\s*'`)
	reportedZH = regexp.MustCompile(`(?:说|写着|写道|原话|提到|文档|注释|报错|提交)[^“「"『]{0,20}[“「"『]`)

	hedgeEN = regexp.MustCompile(`(?i)\b(?:not\s+sure|i\s+think|i\s+believe|might|may\s+have|maybe|possibly|perhaps|probably|i\s+heard|someone\s+said|people\s+say|haven't\s+confirmed|not\s+confirmed|not\s+certain|don't\s+remember|can't\s+remember|i\s+guess|i\s+feel|apparently)\b`)
	hedgeZH = regexp.MustCompile(`我觉得|我认为|我感觉|好像|可能|也许|不确定|说不准|听说|没核实|记不清|大概|似乎|不太清楚|不知道是不是|应该是吧`)

	askEN = regexp.MustCompile(`(?i)^(?:please|pls|can\s+you|could\s+you|would\s+you|let\s+me|let's\s+(?:see|try|check|look)|help\s+me|thanks|thank\s+you|fix|refactor|explain|show|tell|summari[sz]e|check|look|try|give|write|add|update|review)\b`)
	askZH = regexp.MustCompile(`^(?:帮我|请你|请帮|请把|麻烦|你能|你可以|能否|给我|我想想|谢谢|现在|马上|立刻)|一下(?:[，,。！!]|$)|帮我`)
)

// A message asks for something now when it holds a question or a
// request of the moment ("Reply with exactly OK", "帮我看看").
var (
	nowEN = regexp.MustCompile(`(?im)^\s*(?:please\s+)?(?:reply|answer|respond|create|list|show|tell|give|print|output|generate|implement|verify|report|establish|record|define|summari[sz]e|explain|describe|fix|refactor|review|check|look|run\s+this|do\s+this|now\s+\w+)\b|\bright\s+now\b|\bexactly\s+once\b|\breply\s+with\b`)
	nowZH = regexp.MustCompile(`帮我|请你|麻烦你|给我|你看着|直接输出|现在就|马上`)
)

var politeRuleRe = regexp.MustCompile(`(?i)^please\s+(?:don't|don’t|do\s+not|never|always|remember|keep|make\s+sure|note|avoid)\b`)

// asksNow reports whether a message (pasted parts left out) asks a
// question or for something to be done now.
func asksNow(text string) bool {
	if strings.ContainsAny(text, "?？") || nowEN.MatchString(text) || nowZH.MatchString(text) {
		return true
	}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if politeRuleRe.MatchString(l) {
			continue // "please don't …" states a rule
		}
		if questionEN.MatchString(l) || askEN.MatchString(l) {
			return true
		}
	}
	return false
}

// skipStatement reports why a statement is not learnt from (a question, a
// hypothetical, a joke, another project's, words the user did not mean,
// reported speech), or "".
func skipStatement(s, lang string) string {
	if lang == "zh" {
		switch {
		case questionZH.MatchString(s):
			return "question"
		case hypotheticalZH.MatchString(s):
			return "hypothetical"
		case jokeZH.MatchString(s):
			return "joke"
		case otherProjectZH.MatchString(s):
			return "another project"
		case notSaidZH.MatchString(s):
			return "negated"
		case reportedZH.MatchString(s):
			return "reported"
		}
	}
	// English filters apply to every statement: zh text quotes English.
	switch {
	case lang == "en" && questionEN.MatchString(s):
		return "question"
	case lang == "en" && hypotheticalEN.MatchString(s):
		return "hypothetical"
	case jokeEN.MatchString(s):
		return "joke"
	case otherProjectEN.MatchString(s):
		return "another project"
	case notSaidEN.MatchString(s):
		return "negated"
	case reportedEN.MatchString(s):
		return "reported"
	}
	return ""
}

// activityRe matches what the user is doing or sending now ("I'm now
// looking at…", "我已经发给你了"): a time word there marks no change of
// the project.
var activityRe = regexp.MustCompile(`(?i)^(?:i|i'm|i’m|i've|i’ve|i'll|let\s+me|we're\s+(?:looking|checking|trying|testing|working|debugging))\b|\b(?:looking\s+at|checking|trying|debugging|working\s+on|sent\s+you|sending)\b|^我[^们]|给你|发你|看看|试试|正在|在看|在查|在试|修好了|搞定`)

// hedged reports whether a statement says it may not be so.
func hedged(s string) bool { return hedgeEN.MatchString(s) || hedgeZH.MatchString(s) }

// askingNow reports whether a statement asks for something now rather
// than telling something that stays true.
func askingNow(s string) bool { return askEN.MatchString(s) || askZH.MatchString(s) }

// statementLang is "zh" when s holds a Han character, else "en".
func statementLang(s string) string {
	for _, r := range s {
		if r >= 0x4e00 && r <= 0x9fff {
			return "zh"
		}
	}
	return "en"
}
