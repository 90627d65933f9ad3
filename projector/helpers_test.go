package projector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dshmem/events"
	"dshmem/sqlstore"

	"github.com/stretchr/testify/require"
)

func openStore(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(filepath.Join(t.TempDir(), "index.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// mustRead returns entry id as the index holds it.
func mustRead(t testing.TB, s *sqlstore.Store, id string) sqlstore.Entry {
	t.Helper()
	e, ok, err := s.Entry(context.Background(), id)
	require.NoError(t, err, "entry %s: %v (found %v)", id, err, ok)
	require.True(t, ok, "entry %s: %v (found %v)", id, err, ok)
	return e
}

func entriesOf(t testing.TB, s *sqlstore.Store, f sqlstore.EntryFilter) []sqlstore.Entry {
	t.Helper()
	es, err := s.Entries(context.Background(), f)
	require.NoError(t, err)
	return es
}

func history(t testing.TB, s *sqlstore.Store, id string) []sqlstore.EntryVersion {
	t.Helper()
	vs, err := s.EntryHistory(context.Background(), id)
	require.NoError(t, err)
	return vs
}

// tagsJSON is tags as the tags column holds them (the fold writes a
// JSON array, never null).
func tagsJSON(tags []string) string {
	b, _ := json.Marshal(tags)
	return string(b)
}

func dump(t testing.TB, s *sqlstore.Store) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Dump(context.Background(), s, &b))
	return b.String()
}

// foldedDump folds evs into a new store in one call and returns its
// Dump: the reference the order, split and catch-up tests compare with.
func foldedDump(t testing.TB, evs []events.Envelope) string {
	t.Helper()
	s := openStore(t)
	mustFold(t, New(s), evs)
	return dump(t, s)
}

func mustFold(t testing.TB, p *Projector, evs []events.Envelope) {
	t.Helper()
	require.NoError(t, p.Fold(context.Background(), evs))
}

// ev builds an envelope; data is marshalled to JSON (nil for none).
func ev(stream string, seq uint64, typ, session string, data any) events.Envelope {
	e := events.Envelope{
		V: 1, Stream: stream, Seq: seq, Type: typ, Session: session,
		ID:   fmt.Sprintf("t:%s:%d", stream, seq),
		Time: time.Date(2026, 8, 18, 10, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second).Format(time.RFC3339Nano),
	}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		e.Data = b
	}
	return e
}

// fakeSource is an in-memory log.
type fakeSource struct{ streams map[string][]events.Envelope }

func newFakeSource(evs []events.Envelope) *fakeSource {
	f := &fakeSource{streams: map[string][]events.Envelope{}}
	for _, e := range evs {
		f.streams[e.Stream] = append(f.streams[e.Stream], e)
	}
	return f
}

func (f *fakeSource) Streams() []string {
	var out []string
	for s := range f.streams { // map order on purpose: CatchUp must not care
		out = append(out, s)
	}
	return out
}

func (f *fakeSource) Scan(stream string, from uint64, fn func(events.Envelope) error) error {
	buf := make([]byte, 0, 1024)
	for _, e := range f.streams[stream] {
		if e.Seq < from {
			continue
		}
		// Reuse one buffer for Data, as a real reader may.
		buf = append(buf[:0], e.Data...)
		e.Data = buf
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

var (
	zhWords = strings.Fields("我们 记忆 注入 逻辑 需要 修复 会话 日志 压缩 摘要 工作区 配置 测试 数据库 索引 搜索 中文 分词 用户 助手 工具 结果 问题 方案 部署 服务器 文件 目录 缓存 性能")
	enWords = strings.Fields("parseHTTPRequest go_build.sh the memory index sqlite fts5 bigram session replay cursor projector fold commit rollback deepseek harness cordis node typescript zstd segment writer reader verify repair /usr/local/bin os.path.join userID")

	// A larger vocabulary for corpus, so that index sizes are not
	// flattered by a tiny one: 8,000 Chinese words of 2–3 characters
	// drawn from the first 6,000 CJK ideographs, and 2,000 camelCase
	// identifiers, both picked with a Zipf law like real text.
	bigZh, bigEn = func() (zh, en []string) {
		r := rand.New(rand.NewPCG(1, 2))
		for range 8000 {
			n := 2 + r.IntN(2)
			var b strings.Builder
			for range n {
				b.WriteRune(rune(0x4E00 + r.IntN(6000)))
			}
			zh = append(zh, b.String())
		}
		syl := strings.Fields("ka lo mi ra te su no ve pi do ga ni ze bo hu ly qua ster ment tion")
		for range 2000 {
			var b strings.Builder
			for j := range 2 + r.IntN(3) {
				s := syl[r.IntN(len(syl))]
				if j > 0 && r.IntN(2) == 0 {
					s = strings.ToUpper(s[:1]) + s[1:]
				}
				b.WriteString(s)
			}
			en = append(en, b.String())
		}
		return zh, en
	}()
)

// corpus returns n events of one stream: a session/start, then user and
// assistant messages of about size bytes mixing Chinese and English, with
// a tool result, a compaction summary and a remember now and then.
func corpus(stream string, n int, size int, seed uint64) []events.Envelope {
	return corpusOf(stream, n, size, seed, sentence)
}

// corpusOf is corpus with a choice of text generator.
func corpusOf(stream string, n int, size int, seed uint64, sentence func(*rand.Rand, int) string) []events.Envelope {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	session := fmt.Sprintf("session-%s-%d", stream, seed)
	out := make([]events.Envelope, 0, n)
	out = append(out, withCwd(ev(stream, 1, events.TypeSessionStart, session, map[string]any{"origin": "top"}), "/home/u/"+stream))
	for seq := uint64(2); seq <= uint64(n); seq++ {
		text := sentence(r, size)
		var e events.Envelope
		switch k := r.IntN(100); {
		case k < 45:
			e = ev(stream, seq, events.TypeUserMessage, session, map[string]any{"text": text})
		case k < 90:
			e = ev(stream, seq, events.TypeAssistantMessage, session, map[string]any{"text": text})
		case k < 95:
			e = ev(stream, seq, events.TypeToolResult, session, map[string]any{"name": "bash", "ok": true, "text": text})
		case k < 97:
			e = ev(stream, seq, events.TypeCompactionSummary, session, map[string]any{"compactionId": fmt.Sprint(seq), "text": text})
		case k < 98:
			e = ev(stream, seq, events.TypeMemoryRemember, session, map[string]any{"content": text, "tags": []string{"bench"}})
		default:
			e = ev(stream, seq, events.TypeTurnEnd, session, map[string]any{"reason": "stop"})
		}
		out = append(out, e)
	}
	return out
}

func withCwd(e events.Envelope, cwd string) events.Envelope { e.Cwd = cwd; return e }

// smallSentence draws from 60 words only: FTS5 then sees few distinct
// terms, the flattering case.
func smallSentence(r *rand.Rand, size int) string {
	var b strings.Builder
	for b.Len() < size {
		if r.IntN(3) == 0 {
			b.WriteString(enWords[r.IntN(len(enWords))])
			b.WriteByte(' ')
		} else {
			b.WriteString(zhWords[r.IntN(len(zhWords))])
		}
	}
	return b.String()
}

// sentence draws from the large Zipf vocabulary.
func sentence(r *rand.Rand, size int) string {
	zipfZh := rand.NewZipf(r, 1.1, 4, uint64(len(bigZh)-1))
	zipfEn := rand.NewZipf(r, 1.1, 4, uint64(len(bigEn)-1))
	var b strings.Builder
	for b.Len() < size {
		if r.IntN(3) == 0 {
			b.WriteString(bigEn[zipfEn.Uint64()])
			b.WriteByte(' ')
		} else {
			b.WriteString(bigZh[zipfZh.Uint64()])
			if r.IntN(8) == 0 {
				b.WriteString("，")
			}
		}
	}
	return b.String()
}
