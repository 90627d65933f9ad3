// dshmem settings page. Plain script, no build step. Every text that
// comes from memory is put in the page with textContent, never as HTML.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const state = { csrf: '', bin: false, scopes: [], current: null, status: 'active' };

  // api calls a route of the page; a change carries the CSRF token.
  async function api(method, path, body) {
    const opt = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
    if (method !== 'GET') {
      opt.headers['Content-Type'] = 'application/json';
      opt.headers['X-CSRF-Token'] = state.csrf;
      opt.body = JSON.stringify(body || {});
    }
    const r = await fetch(path, opt);
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (r.status === 401) {
      location.reload(); // the server shows how to log in
    }
    if (!r.ok) {
      throw new Error(data && data.error ? data.error.message : r.status + ' ' + r.statusText);
    }
    return data;
  }

  // el builds an element; strings among kids become text nodes.
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for' || k === 'type' || k === 'role') e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }

  let sayTimer = 0;
  function say(msg) {
    $('alert').textContent = '';
    $('status').textContent = msg;
    clearTimeout(sayTimer);
    sayTimer = setTimeout(() => { $('status').textContent = ''; }, 8000);
  }
  function fail(err) {
    $('status').textContent = '';
    $('alert').textContent = err.message || String(err);
  }
  const guard = (fn) => async (ev) => {
    if (ev && ev.preventDefault) ev.preventDefault();
    try { await fn(ev); } catch (err) { fail(err); }
  };

  function counts(s) {
    const e = s.entries || {};
    const parts = [];
    for (const k of ['active', 'conflict', 'superseded', 'forgotten']) if (e[k]) parts.push(e[k] + ' ' + k);
    return parts.length ? parts.join(' · ') : 'no entries';
  }
  const when = (t) => (t ? t.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : 'never');
  function size(n) {
    if (n < 1024) return n + ' B';
    if (n < 1 << 20) return (n / 1024).toFixed(1) + ' KiB';
    return (n / (1 << 20)).toFixed(1) + ' MiB';
  }

  // The scope picker.
  async function loadScopes() {
    const r = await api('GET', '/ui/api/scopes?archived=' + (state.bin ? '1' : '0'));
    state.scopes = r.scopes;
    renderScopes();
  }
  function renderScopes() {
    const f = $('scope-filter').value.trim().toLowerCase();
    const list = $('scope-list');
    const shown = state.scopes.filter((s) => !f || s.key.toLowerCase().includes(f) || (s.dir || '').toLowerCase().includes(f));
    list.replaceChildren(...shown.map((s) => {
      const b = el('button', { type: 'button', 'data-key': s.key },
        el('span', { class: 'key', text: s.key }),
        el('span', { class: 'dir', text: s.dir || (s.key === 'global' ? 'every workspace' : 'directory unknown') }),
        el('span', { class: 'counts', text: counts(s) }));
      if (state.current && state.current.key === s.key) b.setAttribute('aria-current', 'true');
      b.addEventListener('click', guard(() => selectScope(s.key, true)));
      return el('li', {}, b);
    }));
    const where = state.bin ? 'in the recycle bin' : 'active';
    $('scope-count').textContent = shown.length === state.scopes.length
      ? state.scopes.length + ' scopes ' + where
      : shown.length + ' of ' + state.scopes.length + ' scopes ' + where;
  }
  async function setView(bin) {
    state.bin = bin;
    $('view-active').setAttribute('aria-pressed', String(!bin));
    $('view-bin').setAttribute('aria-pressed', String(bin));
    closeScope();
    await loadScopes();
  }
  function closeScope() {
    state.current = null;
    $('scope').hidden = true;
    $('empty').hidden = false;
  }

  // One scope.
  async function selectScope(key, focus) {
    const r = await api('GET', '/ui/api/scopes/' + encodeURIComponent(key));
    const s = r.scope;
    state.current = s;
    $('empty').hidden = true;
    $('scope').hidden = false;
    $('scope').dataset.key = s.key;
    $('scope-title').textContent = s.key + (s.archived ? ' (in the recycle bin)' : '');
    $('scope-dir').textContent = s.dir || (s.key === 'global' ? 'The global scope: memory for every workspace.' : '');
    const facts = [
      ['Entries', counts(s)], ['Checkpoints', String(s.checkpoints)], ['Sessions', String(s.sessions)],
      ['Last activity', when(s.lastActivity)], ['Events', String(s.events ?? 0)], ['On disk', size(s.bytes || 0)],
    ];
    $('scope-facts').replaceChildren(...facts.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v, 'data-fact': k.toLowerCase() })]));
    $('archive').hidden = s.archived || s.key === 'global';
    $('restore').hidden = !s.archived;
    $('purge-form').hidden = s.key === 'global';
    $('purge-confirm').value = '';
    $('purge').disabled = true;
    $('summary-path').textContent = r.summaryPath;
    $('summary').textContent = r.summary || 'No summary rendered yet.';
    $('remember-form').hidden = s.archived;
    $('search-results').replaceChildren();
    $('history').hidden = true;
    renderScopes();
    await loadEntries();
    if (focus) $('scope-title').focus();
  }

  async function loadEntries() {
    const s = state.current;
    const r = await api('GET', '/ui/api/scopes/' + encodeURIComponent(s.key) + '/entries?status=' + state.status);
    const label = state.status === 'all' ? '' : state.status + ' ';
    const noun = r.total === 1 ? 'entry' : 'entries';
    $('entries-count').textContent = r.total === r.entries.length
      ? r.total + ' ' + label + noun
      : 'the newest ' + r.entries.length + ' of ' + r.total + ' ' + label + noun;
    $('entries').replaceChildren(...r.entries.slice().reverse().map(entryItem));
  }

  function entryItem(e) {
    const li = el('li', { class: 'entry', 'data-id': e.id, 'data-status': e.status });
    const tags = (e.tags || []).length ? ' · tags: ' + e.tags.join(', ') : '';
    li.append(
      el('h4', { text: e.title }),
      el('p', { class: 'meta' }, el('span', { class: 'badge ' + e.status, text: e.status }),
        ...(e.confidence < 0.5 ? [' ', el('span', { class: 'badge low-confidence', text: 'low confidence ' + e.confidence.toFixed(2) })] : []),
        ' ' + e.type + ' · importance ' + e.importance + ' · confidence ' + Number(e.confidence).toFixed(2) +
        ' · version ' + e.version + ' · ' + when(e.updatedAt) + tags + ' · ' + e.id),
      el('p', { class: 'content', text: e.content }));
    const buttons = el('div', { class: 'buttons', role: 'group', 'aria-label': 'Actions for ' + e.title });
    const hist = el('button', { type: 'button', class: 'history', text: 'History', 'aria-label': 'History of ' + e.title });
    hist.addEventListener('click', guard(() => showHistory(e.id)));
    buttons.append(hist);
    if (e.status !== 'forgotten' && e.status !== 'superseded' && !state.current.archived) {
      const edit = el('button', { type: 'button', class: 'edit', text: 'Edit', 'aria-label': 'Edit ' + e.title });
      edit.addEventListener('click', () => editForm(li, e));
      const forget = el('button', { type: 'button', class: 'forget', text: 'Forget', 'aria-label': 'Forget ' + e.title });
      forget.addEventListener('click', () => forgetForm(li, e));
      buttons.append(edit, forget);
    }
    li.append(buttons);
    return li;
  }

  function field(id, label, input) {
    input.id = id;
    return el('div', {}, el('label', { for: id, text: label }), input);
  }

  function editForm(li, e) {
    const old = li.querySelector('form');
    if (old) old.remove();
    const title = el('input', { value: e.title, autocomplete: 'off' });
    const content = el('textarea', { rows: 4 });
    content.value = e.content;
    const reason = el('input', { autocomplete: 'off' });
    const f = el('form', { class: 'edit-form', 'aria-label': 'Edit ' + e.title },
      field('edit-title-' + e.id, 'Title', title),
      field('edit-content-' + e.id, 'Content', content),
      field('edit-reason-' + e.id, 'Why (kept in the history)', reason),
      el('div', { class: 'buttons' }, el('button', { type: 'submit', text: 'Save' }), el('button', { type: 'button', class: 'cancel', text: 'Cancel' })));
    f.querySelector('.cancel').addEventListener('click', () => { f.remove(); li.querySelector('.edit').focus(); });
    f.addEventListener('submit', guard(async () => {
      await api('POST', '/ui/api/entries/' + encodeURIComponent(e.id) + '/revise',
        { title: title.value, content: content.value, reason: reason.value });
      say('Saved a new version of “' + title.value + '”.');
      await refresh();
    }));
    li.append(f);
    title.focus();
  }

  function forgetForm(li, e) {
    const old = li.querySelector('form');
    if (old) old.remove();
    const reason = el('input', { autocomplete: 'off' });
    const f = el('form', { class: 'forget-form', 'aria-label': 'Forget ' + e.title },
      field('forget-reason-' + e.id, 'Why forget it (optional, kept in the history)', reason),
      el('div', { class: 'buttons' }, el('button', { type: 'submit', class: 'confirm-forget', text: 'Forget this entry' }),
        el('button', { type: 'button', class: 'cancel', text: 'Cancel' })));
    f.querySelector('.cancel').addEventListener('click', () => { f.remove(); li.querySelector('.forget').focus(); });
    f.addEventListener('submit', guard(async () => {
      await api('POST', '/ui/api/entries/' + encodeURIComponent(e.id) + '/forget', { reason: reason.value });
      say('Forgot “' + e.title + '”. It stays in the history; switch to “forgotten” to see it.');
      await refresh();
      $('entries-title').focus();
    }));
    li.append(f);
    reason.focus();
  }

  async function showHistory(id) {
    const r = await api('GET', '/ui/api/entries/' + encodeURIComponent(id));
    const e = r.entry;
    $('history').hidden = false;
    $('history').dataset.id = e.id;
    $('history-title').textContent = 'History of “' + e.title + '” (' + r.versions.length + ' versions)';
    const p = e.provenance || {};
    const bits = [];
    if (p.source) bits.push('made by: ' + p.source);
    if (p.checkpoint) bits.push('checkpoint ' + p.checkpoint);
    if (p.reason) bits.push('reason: ' + p.reason);
    if (p.eventIds) bits.push('from events ' + p.eventIds.join(', '));
    $('history-prov').textContent = 'Provenance — ' + (bits.join(' · ') || 'none recorded');
    $('versions').replaceChildren(...r.versions.map((v) => el('li', { class: 'version', 'data-op': v.op },
      el('p', { class: 'meta', text: 'version ' + v.version + ' · ' + v.op + ' · ' + v.status + ' · ' + when(v.time) +
        ' · event ' + v.eventType + ' ' + v.eventId + ' (' + v.stream + ' seq ' + v.seq + ')' + (v.checkpoint ? ' · ' + v.checkpoint : '') }),
      el('p', { text: v.title + ' — ' + v.content }),
      v.reason ? el('p', { class: 'meta', text: 'why: ' + v.reason }) : null)));
    $('history-title').focus();
  }

  async function refresh() {
    const key = state.current.key;
    await loadScopes();
    await selectScope(key, false);
  }

  async function lifecycle(what) {
    const s = state.current;
    const r = await api('POST', '/ui/api/scopes/' + encodeURIComponent(s.key) + '/' + what, {});
    closeScope();
    await loadScopes();
    say(what === 'archive'
      ? 'Moved ' + r.key + ' to the recycle bin. It is no longer recalled; restore it from the bin.'
      : 'Restored ' + r.key + '. It is recalled again.');
    $('picker-title').focus();
  }

  async function purge() {
    const s = state.current;
    const r = await api('POST', '/ui/api/scopes/' + encodeURIComponent(s.key) + '/purge', { confirm: $('purge-confirm').value });
    closeScope();
    await loadScopes();
    say('Purged ' + r.key + ': ' + r.events + ' events and ' + size(r.bytes) + ' removed for good.');
    $('picker-title').focus();
  }

  async function search() {
    const q = $('search-q').value.trim();
    const out = $('search-results');
    if (!q) { out.replaceChildren(el('p', { text: 'Type what to look for.' })); return; }
    const r = await api('GET', '/ui/api/search?q=' + encodeURIComponent(q) + '&scope=' + encodeURIComponent(state.current.key));
    const items = r.items.map((it) => el('li', { class: 'result', 'data-id': it.id },
      el('h4', { text: it.title || it.id }),
      el('p', { class: 'meta', text: it.kind + ' · ' + it.status + ' · score ' + it.score.toFixed(2) + ' · ' + it.id }),
      el('p', { text: it.text })));
    out.replaceChildren(
      el('h4', { text: items.length + (items.length === 1 ? ' result' : ' results') + ' for “' + q + '”' }),
      items.length ? el('ul', { class: 'results' }, ...items) : el('p', { class: 'muted', text: r.guidance || 'Nothing matches.' }));
  }

  async function remember() {
    const s = state.current;
    const content = $('remember-content').value;
    const e = await api('POST', '/ui/api/scopes/' + encodeURIComponent(s.key) + '/remember',
      { content, title: $('remember-title-in').value, type: $('remember-type').value });
    $('remember-content').value = '';
    $('remember-title-in').value = '';
    say('Remembered “' + e.title + '” (' + e.id + ').');
    await refresh();
  }

  async function start() {
    const s = await api('GET', '/ui/api/session');
    state.csrf = s.csrf;
    $('view-active').addEventListener('click', guard(() => setView(false)));
    $('view-bin').addEventListener('click', guard(() => setView(true)));
    $('scope-filter').addEventListener('input', renderScopes);
    $('archive').addEventListener('click', guard(() => lifecycle('archive')));
    $('restore').addEventListener('click', guard(() => lifecycle('restore')));
    $('purge-confirm').addEventListener('input', () => {
      $('purge').disabled = !state.current || $('purge-confirm').value !== state.current.key;
    });
    $('purge-form').addEventListener('submit', guard(purge));
    $('search-form').addEventListener('submit', guard(search));
    $('remember-form').addEventListener('submit', guard(remember));
    $('history-close').addEventListener('click', () => {
      const id = $('history').dataset.id;
      $('history').hidden = true;
      const b = document.querySelector('.entry[data-id="' + CSS.escape(id) + '"] .history');
      if (b) b.focus();
    });
    for (const r of document.querySelectorAll('input[name=status]')) {
      r.addEventListener('change', guard(async () => { state.status = r.value; await loadEntries(); }));
    }
    $('logout').addEventListener('click', guard(async () => { await api('POST', '/ui/api/logout', {}); location.reload(); }));
    await loadScopes();
    document.body.dataset.ready = 'true';
  }
  document.addEventListener('DOMContentLoaded', () => { start().catch(fail); });
})();
