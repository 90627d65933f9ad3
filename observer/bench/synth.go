package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Synth makes deterministic synthetic agent chatter for benchmarks:
// mixed English, Chinese and code identifiers drawn from a Zipf-like
// vocabulary, with a fixed seed so every run sees the same events.
type Synth struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
	start time.Time
}

var synthEnglish = strings.Fields(`the a to of and in is it for that this on with we be
fix test build error memory session index log file config user agent tool call result
should run check update add remove parse stream segment batch query recall search
deploy database schema migration token latency cache request response retry timeout
handler server client module package function variable struct interface commit branch
review merge release version docker kubernetes postgres mysql redis sqlite golang rust
python node typescript react vite webpack eslint prettier jest vitest benchmark profile`)

var synthChinese = strings.Fields(`记忆 注入 问题 修复 会话 日志 索引 检索 数据库 迁移
配置 用户 工具 调用 结果 测试 构建 错误 部署 版本 提交 分支 合并 发布 缓存 请求
响应 重试 超时 服务 客户端 模块 函数 变量 接口 性能 延迟 压缩 文件 目录 权限 代理
我们 需要 已经 可以 因为 所以 但是 如果 然后 现在 之前 之后 一下 这个 那个 应该`)

var synthCode = strings.Fields(`parseHTTPRequest go_build.sh /usr/local/bin os.path.join
memory_summary.md dshmem-serve index.db recallTopK session.jsonl.zstd fetchUserProfile
handle_error src/observer/engine.go MaxBatchSize kebab-case-name api/v1/recall`)

// NewSynth returns a generator seeded with seed.
func NewSynth(seed uint64) *Synth {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var vocab []string
	// Interleave so that common ranks hold all three kinds.
	for i := 0; i < len(synthEnglish) || i < len(synthChinese) || i < len(synthCode); i++ {
		if i < len(synthEnglish) {
			vocab = append(vocab, synthEnglish[i])
		}
		if i < len(synthChinese) {
			vocab = append(vocab, synthChinese[i])
		}
		if i < len(synthCode) {
			vocab = append(vocab, synthCode[i])
		}
	}
	// A long tail of rare made-up words.
	for i := 0; i < 20000; i++ {
		vocab = append(vocab, fmt.Sprintf("w%04x", i))
	}
	return &Synth{
		rng:   rng,
		zipf:  rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1)),
		vocab: vocab,
		start: time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC),
	}
}

// Text returns about n bytes of chatter.
func (s *Synth) Text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.vocab[s.zipf.Uint64()])
	}
	return b.String()
}

// Line returns the i-th synthetic envelope as a JSONL line (without
// seq), about size bytes long, in one of streams workspaces.
func (s *Synth) Line(i, size, workspaces int) []byte {
	typ := "user/message"
	if i%2 == 1 {
		typ = "assistant/message"
	}
	ws := i % max(workspaces, 1)
	session := fmt.Sprintf("bench-%d", ws)
	t := s.start.Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00")
	head := fmt.Sprintf(`{"id":"bench:%d","type":%q,"time":%q,"session":%q,"cwd":"/bench/ws%d","data":{"text":"`, i, typ, t, session, ws)
	tail := `"}}`
	text := s.Text(max(size-len(head)-len(tail), 16))
	return []byte(head + text + tail)
}
