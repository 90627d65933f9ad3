package distill

import (
	"context"
	"testing"

	"dshmem/events/payload"

	"github.com/stretchr/testify/require"
)

// user, assistant and injected build messages with event ids "e<seq>".
func user(seq uint64, text string) Message {
	return Message{EventID: evID(seq), Seq: seq, Role: RoleUser, Text: text}
}

func assistant(seq uint64, text string) Message {
	return Message{EventID: evID(seq), Seq: seq, Role: RoleAssistant, Text: text}
}

func tool(seq uint64, text string) Message {
	return Message{EventID: evID(seq), Seq: seq, Role: RoleTool, Text: text}
}

func injected(seq uint64, text string) Message {
	return Message{EventID: evID(seq), Seq: seq, Role: RoleUser, Injected: true, Text: text}
}

func evID(seq uint64) string { return "e" + string(rune('0'+seq/10)) + string(rune('0'+seq%10)) }

// mysqlEntry is the existing entry the MySQL → PostgreSQL corrections aim at.
var mysqlEntry = Entry{
	ID: "m-db", Scope: "ws-1", Type: payload.TypeDecision, Title: "Database: MySQL 8",
	Content: "The service stores its data in MySQL 8.0 on db.internal.", Status: payload.StatusActive, Importance: 2,
}

var pnpmEntry = Entry{
	ID: "m-pm", Scope: "ws-1", Type: payload.TypeDecision, Title: "Package manager: npm",
	Content: "Install dependencies with npm ci.", Status: payload.StatusActive,
}

var gofmtEntry = Entry{
	ID: "m-fmt", Scope: "ws-1", Type: payload.TypeRule, Title: "Always run gofmt",
	Content: "Always run gofmt before committing Go code.", Status: payload.StatusActive,
}

func request(related []Entry, msgs ...Message) Request {
	return Request{Stream: "ws-1", Session: "s1", From: 1, To: 99, Messages: msgs, Related: related}
}

func distillRules(t *testing.T, req Request) []Op {
	t.Helper()
	res, err := NewRules().Distill(context.Background(), req)
	require.NoError(t, err, "Distill")
	require.Equal(t, ResultVersion, res.Version, "version: got %d, want %d", res.Version, ResultVersion)
	return res.Operations
}
