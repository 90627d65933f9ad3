package plugin_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"dshmem/observer/dsh/plugin/hosttest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPluginAgainstFakeServer runs plugin.mjs in Node with a stand-in for
// the host's ctx and a stand-in server, to pin what the real host cannot
// be made to show on demand: a slow answer keeps the server (memory stays
// on), a session's end is sent after it, a packet reaches the next step
// through the long poll, and forgetting one of its entries takes it out
// of the runtime context.
func TestPluginAgainstFakeServer(t *testing.T) {
	h := hosttest.Find(t)
	pluginPath, err := filepath.Abs("plugin.mjs")
	require.NoError(t, err)
	root := t.TempDir()
	script := `
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import * as plugin from ` + jsString(pluginPath) + `;
const root = ` + jsString(root) + `;
let slow = false, packetSent = false;
const got = [];
const srv = http.createServer((req, res) => {
  let body = ''; req.on('data', (c) => body += c); req.on('end', () => {
    const path = req.url.split('?')[0];
    got.push(req.method + ' ' + path);
    const json = (o) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(o)); };
    if (path === '/v1/healthz') return json({ ok: true });
    if (path === '/v1/context') return json({ section: 'FACT', dynamic: '', maintenance: [] });
    if (path.endsWith('/prompt')) {
      if (slow) { slow = false; return setTimeout(() => { res.statusCode = 204; res.end(); }, 1700); }
      res.statusCode = 204; return res.end();
    }
    if (path.endsWith('/packet')) {
      if (!packetSent) { packetSent = true; return json({ text: '[dshmem memory] use --lock-wait 60', entries: [{ id: 'm-1' }] }); }
      return setTimeout(() => { res.statusCode = 204; res.end(); }, 300);
    }
    if (path === '/v1/forget') return json({ id: 'm-1', title: 'lock wait' });
    return json({});
  });
});
await new Promise((r) => srv.listen(0, '127.0.0.1', r));
writeFileSync(root + '/serve.json', JSON.stringify({ addr: '127.0.0.1:' + srv.address().port, token: 't', pid: 1 }));
const hooks = {}, tools = {};
const ctx = { on: (n, f) => { hooks[n] = f; }, effect: (f) => f(), logger: () => ({ warn() {} }),
  systemPrompt: { section() {}, variable() {} }, tools: { register: (t) => { tools[t.name] = t; } } };
plugin.apply(ctx, { root, binary: '/bin/false' });
const agent = { session: { id: 'S1', header: { cwd: '/tmp' } } };
const step = async () => {
  const a = { sections: [{ name: 'dshmem:memory', text: '' }], contexts: [], tools: [{ name: 'memory_search' }] };
  const out = await hooks['system-prompt/assemble'](a, { agent }, async () => a);
  return { section: out.sections[0].text, packet: out.contexts.some((c) => c.name === 'dshmem:packet'), tools: out.tools.length };
};
const claim = (text) => hooks['agent/inbox/claimed']({ agent, message: { id: 'u' + text, source: { kind: 'user' }, content: [{ type: 'text', text }] } });
const r = {};
claim('first'); r.first = await step();
await new Promise((res) => setTimeout(res, 200)); // the long poll brings the packet
r.pushed = await step();
slow = true; claim('slow one'); r.slow = await step();
try { r.search = (await tools.memory_forget.execute({ id: 'm-1' }, { agent })).text; } catch (e) { r.search = 'error: ' + e.message; }
r.afterForget = await step();
got.length = 0;
hooks['session/disposed']({ id: 'S1' });
await new Promise((res) => setTimeout(res, 300));
r.afterEnd = got.filter((g) => g === 'POST /v1/events').length;
console.log(JSON.stringify(r));
process.exit(0);
`
	path := filepath.Join(t.TempDir(), "plugin-check.mjs")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o600))
	out, err := exec.Command(filepath.Join(h.Node(), "node"), path).Output()
	require.NoError(t, err, "node: %v\n%s", err, out)
	type stepOut struct {
		Section string
		Packet  bool
		Tools   int
	}
	var r struct {
		First, Pushed, Slow, AfterForget stepOut
		Search                           string
		AfterEnd                         int
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	assert.False(t, r.First.Section != "FACT" || r.First.Tools != 1, "first step: %+v; want the section and the memory tools", r.First)
	assert.True(t, r.Pushed.Packet, "the packet the long poll brought did not reach the next step: %+v", r.Pushed)
	assert.False(t, r.Slow.Section != "FACT" || !r.Slow.Packet, "a slow answer turned memory off: %+v", r.Slow)
	assert.EqualValues(t, "Forgot m-1: lock wait", r.Search, "memory_forget after a slow answer: %q; want it to reach the server", r.Search)
	assert.False(t, r.AfterForget.Packet, "the packet that showed the forgotten entry is still in the context")
	assert.EqualValues(t, 1, r.AfterEnd, "%d session ends sent after dispose, want 1", r.AfterEnd)
}
