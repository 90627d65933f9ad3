// Package ui is the Memory settings page that `dshmem serve` mounts at
// /ui/: its embedded files, its one-time login, and the JSON routes its
// script calls.
//
// # Login
//
// `dshmem ui` asks the server for a link (POST /v1/ui/link, behind the
// API's bearer token). The link's token is 32 random bytes that work
// once and for Options.LinkTTL; GET /ui/login?t=TOKEN spends it and sets
// the session cookie (CookieName: HttpOnly, SameSite=Strict, Path=/ui/)
// for Options.SessionTTL. Links and sessions are kept in memory, keyed by
// the sha256 of their secret, and bounded in number; a restart of the
// server ends every session.
//
// # Requests
//
// Every read route needs a live session and is refused when the browser
// says another site asked (Sec-Fetch-Site). Every change is a POST that
// also needs the session's CSRF token in the CSRFHeader (or the form
// field CSRFField), compared in constant time, and an Origin (where the
// browser sends one) equal to the page's own; anything else is 403 and
// writes nothing. Every answer carries ContentSecurityPolicy (the page's
// own script and style only, no framing), nosniff, no-referrer and
// no-store.
//
// # Routes
//
//	GET  /ui/                                 the page (the login help without a session)
//	GET  /ui/login?t=TOKEN                    spend a login link
//	GET  /ui/api/session                      {csrf, expires}
//	GET  /ui/api/scopes[?archived=1]          the active scopes or the recycle bin
//	GET  /ui/api/scopes/{key}                 one scope and its rendered summary
//	GET  /ui/api/scopes/{key}/entries?status= its entries (active|conflict|superseded|forgotten|all)
//	GET  /ui/api/entries/{id}                 an entry and its versions, with provenance
//	GET  /ui/api/search?q=&scope=             recall over entries
//	POST /ui/api/scopes/{key}/remember        {content, title, type, tags, importance}
//	POST /ui/api/entries/{id}/revise          {title, content, description, type, tags, importance, reason}
//	POST /ui/api/entries/{id}/forget          {reason}
//	POST /ui/api/scopes/{key}/archive|restore {}
//	POST /ui/api/scopes/{key}/purge           {confirm: the scope's key}
//	POST /ui/api/logout
//
// Reads return what the index holds, redacted once more on the way out
// (observer.Redactor), and never an observed message or a checkpoint's
// raw text: search asks recall for entries only. Every change is an
// engine call (Remember, Revise, Forget, ArchiveScope, RestoreScope,
// PurgeScope) and so an event in the log that replay folds again.
//
// The page is plain HTML, CSS and script embedded with embed.FS (no build
// step, no CDN, no web fonts); the script puts every text from memory in
// the page with textContent.
//
// Imports: ui → observer, sqlstore/recall, events/payload. observer/httpapi
// mounts it.
package ui
