// Package broker keeps the runtime of every live host session and decides
// what memory each is offered: the session-start context (Context) and the
// per-session active packets (Broker).
//
// The broker observes every envelope intake appended (Observe), never
// the raw lines of a request, so its ring of recent turns holds redacted
// text only. Packets are computed off the request path by one worker
// (Run) and handed out by Fetch and FetchOrWait; a packet is for one
// contextVersion of a session and is served at most once
// (ARCHITECTURE §6). Context reads the Markdown projections and the
// index; it writes nothing.
//
// Imports: broker → observer, observer/metrics, sqlstore, markdown,
// events.
package broker
