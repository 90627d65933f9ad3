// Package httpapi is `dshmem serve`'s front door: the HTTP JSON API v1 on
// loopback over one open engine, serve.json, the metrics route, and the
// client the CLI forwards its writes with.
//
// A Server owns the background work of a running root: the packet broker
// (observer/broker), the DSH watcher (observer/importer), automatic
// checkpoints (observer/checkpoint), the sweep of idle sessions, the
// background walk of the log (GET /v1/healthz reports it) and, for a
// server started by the host plugin, the checkpoint run soon after a
// session ends and the exit after --idle-exit of silence (lifecycle.go).
//
// # Intake
//
// POST /v1/events and the watcher feed one intake queue: the calls that
// wait while one runs are joined into the next engine call, so concurrent
// posts share one fsync. The engine returns the stamped, redacted
// envelopes it appended, and only those reach the broker: the broker
// never sees a line that intake refused or text it has not redacted.
//
// # Authentication
//
// Every route but GET /v1/healthz needs `Authorization: Bearer <token>`,
// the token in serve.json (mode 0600, ARCHITECTURE §2). The server
// listens on loopback only. The settings page under /ui/ (observer/ui)
// has a login of its own: POST /v1/ui/link, behind the token, hands out
// one-time links that trade for a session cookie valid under /ui/ only.
//
// Imports: httpapi → observer/{broker,checkpoint,importer,metrics,ui},
// observer, and below. Nothing of ours imports httpapi but cmd and the
// host plugin's installer (which reads serve.json and /v1/healthz).
package httpapi
