package distill

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"dshmem/events/payload"
)

// A statement no pattern takes is still learnt when it plainly states
// how things are in the project: a fix that worked, a procedure, the
// architecture, or a fact. It must name something concrete (a name, a
// number, a path or a noun of the trade), not be hedged, not ask for
// something now, and not open with a demonstrative ("that's from the old
// handbook").
var (
	fixEN = regexp.MustCompile(`(?i)\b(?:fixed|fixes\s+it|fix\s+(?:was|is)|went\s+away|goes\s+away|solved|resolved|was\s+caused\s+by|is\s+caused\s+by|caused\s+by|turns\s+out|turned\s+out|the\s+(?:problem|issue|cause|culprit)\s+was|workaround)\b`)
	fixZH = regexp.MustCompile(`解决了|解决掉|修好了|修复了|就好了|好了$|就没有了|没有了$|是因为|原来是|原来|导致的|导致|根因`)

	procedureEN = regexp.MustCompile(`(?i)^(?:run|build|deploy|restart|execute|bump|install)\s+\S|^first\b.*\bthen\b|^to\s+\w+[^:]{0,60}:|\b(?:before|after)\s+\w+ing\b|\bthen\s+(?:run|make|push|start|deploy|tag|build|restart)\b|\bsteps?\s+(?:are|is|to)\b|^remember\s+to\b|^to\s+\w+.{0,60}?[,:]\s*(?:first\s+)?(?:run|use|call|start|execute|bump|set|add|open)\b|\brun\s+\S+.*\bthen\b`)
	procedureZH = regexp.MustCompile(`步骤|流程|先.{1,30}(?:再|然后|最后|之后)|之前(?:要|得|先|需要)|以后(?:要|得)?先|之后(?:运行|执行|跑)|(?:运行|执行|跑)\s*(?:make|go|npm|pnpm|yarn|\./|bash|sh\b)|(?:执行|运行)\s*[A-Za-z./]`)

	architectureEN = regexp.MustCompile(`(?i)\b(?:talks?\s+to|talk\s+(?:only\s+)?(?:to|through)|calls?\s+(?:the\s+)?\w+\s+(?:service|api)|go(?:es)?\s+(?:only\s+)?through|only\s+through|reads?\s+\w+(?:\s+\w+)?\s+from|writes?\s+\w+(?:\s+\w+)?\s+to|owns?\s+its\s+own|thin\s+client|\blayer\b|microservices?|communicat\w*|only\s+reads|sits?\s+behind|is\s+behind|depends\s+on\s+the\s+\w+\s+service)\b`)
	architectureZH = regexp.MustCompile(`通过|经过|访问|调用|薄客户端|层|微服务|通信|写到|读任务|依赖于|部署在.*前面`)

	stateEN = regexp.MustCompile(`(?i)\b(?:is|are|was|were|runs?|lives?|listens?|uses?|use|needs?|owns?|stores?|goes|go|talks?|reads?|writes?|calls?|builds?|has|have|holds?|contains?|managed|written|owned|built|hosted|deployed|located|kept|served|handled|requires?|depends|expires?|takes?|follows?|points?|sends?|returns?|keeps?|fails?|breaks?|retries|retry|triggers?|rotates?|scales?|caches|emits?|publishes|syncs|polls|times\s+out|expects?|accepts?|allows?|supports?)\b`)
	stateZH = regexp.MustCompile(`是|在|用|跑|监听|放在|存|归|需要|负责|管理|写的|搭的|访问|调用|经过|通过|读|写|有|依赖|部署|运行|占用|保存|过期|备份|同步|触发|发布|重建|生成|重试|会按|会在|每.{0,4}(?:秒|分钟|小时|天|周|月)`)

	concreteEN = regexp.MustCompile(`\S\s+\S*(?:[A-Z]|\d)|[\w-]+[./_][\w-]+|(?i)\b(?:service|services|server|servers|database|db|port|cluster|repo|repository|tests?|ci|job|jobs|docs|folder|directory|api|bucket|branch|environment|staging|production|prod|app|frontend|backend|gateway|queue|cache|build|config|team|rotation|schema|worker|client|clients|layer|version|endpoint|module|package|library|binary|image|container|host|machine|deploy|release|pipeline|migration|table|index|token|key|secret|log|logs|metrics|bug|leak|error|errors|crash|timeout|memory|response|request|body|loop|query|file|files|function|handler|dependency|dependencies|script|command|flag|field|column|commit|commits|messages|webhook|webhooks|callback|cron|backup|backups|retries|requests|payments|billing)\b`)
	concreteZH = regexp.MustCompile(`[A-Za-z0-9]|服务|环境|数据库|端口|集群|文档|任务|目录|仓库|分支|接口|测试|部署|日志|缓存|队列|网关|值班|前端|后端|移动端|构建|依赖|代码|版本|配置|脚本|镜像|存储|模块|组件|表|索引|密钥|令牌|机器|服务器|团队|组|库|备份|生产|线上|主库|从库|接口|限流|回调|支付|请求|重试|账单`)

	// A request of the moment ("run the script on staging now").
	nowRe = regexp.MustCompile(`(?i)\bnow\b|\bright\s+away\b|马上|立刻|现在就`)
	// What holds now and may not tomorrow is not a fact to keep.
	transientEN = regexp.MustCompile(`(?i)\b(?:again|still|currently|right\s+now|today|yesterday|tonight|this\s+(?:morning|afternoon|week|time)|failing|fails|failed|broken|broke|passes|passing|works|working|crash\w*|hangs|stuck|flaky|used\s+to|years\s+ago|back\s+then)\b`)
	transientZH = regexp.MustCompile(`又|还是|目前|今天|昨天|刚才|刚刚|挂了|报错|卡住|跑不起来|不行|好慢|以前|曾经|那时候|年前`)

	demonstrativeEN = regexp.MustCompile(`(?i)^(?:that|this|it|these|those|here|there|which|something|anything|everything|nothing)(?:'s|’s|\s)`)
	demonstrativeZH = regexp.MustCompile(`^(?:这|那|它|此)`)
)

// classify is the type of a statement of how things are: fix, procedure,
// architecture or fact, in that order of precedence.
func classify(s string) string {
	switch {
	case fixEN.MatchString(s) || fixZH.MatchString(s):
		return payload.TypeFix
	case procedureEN.MatchString(s) || procedureZH.MatchString(s):
		return payload.TypeProcedure
	case architectureEN.MatchString(s) || architectureZH.MatchString(s):
		return payload.TypeArchitecture
	}
	return payload.TypeFact
}

// implicitAdd learns a plain statement of how things are (see above).
func implicitAdd(m Message, s, lang string) (Op, bool) {
	// A statement about a secret the intake redacted is no memory.
	if strings.Contains(s, "[REDACTED") || hedged(s) || askingNow(s) || nowRe.MatchString(s) || demonstrativeEN.MatchString(s) || demonstrativeZH.MatchString(s) {
		return Op{}, false
	}
	typ := classify(s)
	// A memory is said in a sentence or two; a paragraph of
	// instructions is a prompt for the task at hand.
	if utf8.RuneCountInString(s) > 200 || len(strings.Fields(s)) > 40 {
		return Op{}, false
	}
	fact := typ == payload.TypeFact
	// An English procedure's cue is specific enough; anything else must
	// name something.
	concrete := typ == payload.TypeProcedure
	if lang == "zh" {
		if utf8.RuneCountInString(s) < 6 || !concreteZH.MatchString(s) || fact && (!stateZH.MatchString(s) || transientZH.MatchString(s)) {
			return Op{}, false
		}
	} else {
		if len(strings.Fields(s)) < 4 || !concrete && !concreteEN.MatchString(s) || fact && (!stateEN.MatchString(s) && !numberRe.MatchString(s) || transientEN.MatchString(s)) {
			return Op{}, false
		}
	}
	op := newAdd(m, s, typ, 2, "rules: implicit-"+typ)
	op.Title = makeTitle("", s, lang)
	op.Confidence = new(0.7)
	return op, true
}
