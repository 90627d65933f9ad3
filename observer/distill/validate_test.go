package distill

import (
	"encoding/json"
	"strings"
	"testing"

	"dshmem/events/payload"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func validateOne(t *testing.T, req Request, o Op) (Op, string) {
	t.Helper()
	ops, rej := Validate(req, Result{Version: 1, Operations: []Op{o}})
	switch {
	case len(ops) == 1 && len(rej) == 0:
		return ops[0], ""
	case len(ops) == 0 && len(rej) == 1:
		return rej[0].Op, rej[0].Why
	}
	t.Fatalf("got %d ops and %d rejected, want one of them", len(ops), len(rej))
	return Op{}, ""
}

func supersede(newQuote, oldQuote string) Op {
	return Op{Op: payload.OpSupersede, TargetID: "m-db", NewQuote: newQuote, OldQuote: oldQuote,
		EvidenceEventIDs: []string{"e02"}, Title: "Database: PostgreSQL", Content: "The service stores its data in PostgreSQL."}
}

func TestValidateSupersede(t *testing.T) {
	msgs := []Message{
		injected(1, "Memory: the database is PostgreSQL now"),
		user(2, "not MySQL — we moved to PostgreSQL"),
		assistant(3, "Noted, we moved to PostgreSQL 16."),
		user(150, "we moved to PostgreSQL 17"), // outside the claimed range 1–99
	}
	req := request([]Entry{mysqlEntry, pnpmEntry}, msgs...)
	for _, c := range []struct {
		name     string
		op       Op
		wantOp   string
		wantWhy  string // substring of Reason
		rejected string // substring of the rejection
	}{
		{"OK", supersede("we moved to PostgreSQL", "MySQL 8"), payload.OpSupersede, "", ""},
		{"OKQuoteFromTitle", supersede("not MySQL", "Database: MySQL"), payload.OpSupersede, "", ""},
		{"ConflictNewQuoteParaphrased", supersede("we now use PostgreSQL", "MySQL"), payload.OpConflict, "newQuote is not verbatim", ""},
		{"ConflictNewQuoteFromInjected", supersede("the database is PostgreSQL now", "MySQL"), payload.OpConflict, "newQuote is not verbatim", ""},
		{"ConflictNewQuoteFromAssistant", supersede("PostgreSQL 16", "MySQL"), payload.OpConflict, "newQuote is not verbatim", ""},
		{"ConflictNewQuoteOutOfRange", supersede("PostgreSQL 17", "MySQL"), payload.OpConflict, "newQuote is not verbatim", ""},
		{"ConflictNoNewQuote", supersede("", "MySQL"), payload.OpConflict, "no newQuote", ""},
		{"ConflictOldQuoteWrong", supersede("we moved to PostgreSQL", "MariaDB"), payload.OpConflict, "oldQuote is not verbatim text of m-db", ""},
		{"ConflictOldQuoteCase", supersede("we moved to PostgreSQL", "mysql"), payload.OpConflict, "oldQuote", ""},
		{"ConflictOldQuoteOfAnotherEntry", supersede("we moved to PostgreSQL", "npm ci"), payload.OpConflict, "oldQuote", ""},
		{"ConflictNoOldQuote", supersede("we moved to PostgreSQL", ""), payload.OpConflict, "no oldQuote", ""},
		{"RejectedNothingNew", Op{Op: payload.OpSupersede, TargetID: "m-db", OldQuote: "MySQL", EvidenceEventIDs: []string{"e02"}}, "", "", "supersede without newQuote, title or content"},
		{"RejectedNoTarget", func() Op { o := supersede("x", "y"); o.TargetID = ""; return o }(), "", "", "without targetId"},
		{"RejectedUnknownTarget", func() Op { o := supersede("x", "y"); o.TargetID = "m-nope"; return o }(), "", "", "not one of the related entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := validateOne(t, req, c.op)
			if c.rejected != "" {
				require.Contains(t, why, c.rejected, "got rejection %q, want %q", why, c.rejected)
				return
			}
			require.EqualValues(t, "", why, "rejected: %s", why)
			assert.False(t, got.Op != c.wantOp || got.TargetID != "m-db", "got %s of %q, want %s of m-db", got.Op, got.TargetID, c.wantOp)
			assert.Contains(t, got.Reason, c.wantWhy, "got reason %q, want it to hold %q", got.Reason, c.wantWhy)
			if c.wantOp == payload.OpConflict && (got.Content == "" || got.Title == "") {
				t.Errorf("conflict lost the new content: %+v", got)
			}
		})
	}
}

func TestValidateAddNearDuplicate(t *testing.T) {
	req := request([]Entry{gofmtEntry, mysqlEntry}, user(2, "always run gofmt before committing Go code"))
	add := Op{Op: payload.OpAdd, Type: payload.TypeRule, Title: "Always run gofmt", Content: "always run gofmt before committing Go code", EvidenceEventIDs: []string{"e02"}}
	t.Run("Revise", func(t *testing.T) {
		got, why := validateOne(t, req, add)
		require.EqualValues(t, "", why, "got %+v (%s), want a revise of m-fmt", got, why)
		require.Equal(t, payload.OpRevise, got.Op, "got %+v (%s), want a revise of m-fmt", got, why)
		require.EqualValues(t, "m-fmt", got.TargetID, "got %+v (%s), want a revise of m-fmt", got, why)
		require.Contains(t, got.Reason, "near-duplicate of m-fmt", "got %+v (%s), want a revise of m-fmt", got, why)
	})
	t.Run("AddOtherScope", func(t *testing.T) {
		r := req
		r.Stream = "global"
		got, why := validateOne(t, r, add)
		require.EqualValues(t, "", why, "got %+v (%s), want an add", got, why)
		require.Equal(t, payload.OpAdd, got.Op, "got %+v (%s), want an add", got, why)
	})
	t.Run("AddNotActive", func(t *testing.T) {
		r := req
		e := gofmtEntry
		e.Status, e.ConflictGroup = payload.StatusConflict, "g1"
		r.Related = []Entry{e}
		// A conflict group member is never the target of a redirected add.
		got, why := validateOne(t, r, add)
		require.EqualValues(t, "", why, "got %+v (%s), want an add", got, why)
		require.Equal(t, payload.OpAdd, got.Op, "got %+v (%s), want an add", got, why)
	})
	t.Run("AddDifferent", func(t *testing.T) {
		o := add
		o.Title, o.Content = "Use pnpm", "Install packages with pnpm, never npm."
		r := request([]Entry{gofmtEntry}, user(2, o.Content))
		got, why := validateOne(t, r, o)
		require.EqualValues(t, "", why, "got %+v (%s), want an add", got, why)
		require.Equal(t, payload.OpAdd, got.Op, "got %+v (%s), want an add", got, why)
	})
}

func TestValidateRevise(t *testing.T) {
	req := request([]Entry{mysqlEntry}, user(2, "MySQL is 8.4 now"))
	got, why := validateOne(t, req, Op{Op: payload.OpRevise, TargetID: "m-db", Content: "The service stores its data in MySQL 8.4.", EvidenceEventIDs: []string{"e02"}})
	require.EqualValues(t, "", why, why)
	// Fields the revise leaves empty keep the target's values.
	assert.False(t, got.Title != mysqlEntry.Title || got.Type != mysqlEntry.Type || value(got.Importance) != mysqlEntry.Importance, "got %+v, want title, type and importance of the target", got)
	if _, why := validateOne(t, req, Op{Op: payload.OpRevise, TargetID: "m-db", EvidenceEventIDs: []string{"e02"}}); !strings.Contains(why, "revise without") {
		t.Errorf("got %q, want an empty revise rejected", why)
	}
}

func TestValidateConflictGroup(t *testing.T) {
	a := Entry{ID: "c-a", Scope: "ws-1", Title: "Deploy on Fridays", Content: "Deploys happen on Fridays.", Status: payload.StatusConflict, ConflictGroup: "g-deploy"}
	b := Entry{ID: "c-b", Scope: "ws-1", Title: "No deploys on Fridays", Content: "Never deploy on Fridays.", Status: payload.StatusConflict, ConflictGroup: "g-deploy"}
	req := request([]Entry{a, b}, user(2, "Never deploy on Fridays, we decided"))
	t.Run("GroupAsTarget", func(t *testing.T) {
		_, why := validateOne(t, req, Op{Op: payload.OpRevise, TargetID: "g-deploy", Content: "x", EvidenceEventIDs: []string{"e02"}})
		assert.Contains(t, why, "conflict group", "got %q, want the group id refused", why)
	})
	t.Run("OldQuoteOnlyInOtherMember", func(t *testing.T) {
		// Aimed at a, quoting b: a is not superseded on b's words.
		got, why := validateOne(t, req, Op{Op: payload.OpSupersede, TargetID: "c-a", NewQuote: "Never deploy on Fridays", OldQuote: "Never deploy on Fridays.",
			Content: "Never deploy on Fridays.", EvidenceEventIDs: []string{"e02"}})
		assert.False(t, why != "" || got.Op != payload.OpConflict || got.TargetID != "c-a", "got %+v (%s), want a conflict aimed at c-a only", got, why)
	})
	t.Run("MemberOK", func(t *testing.T) {
		got, why := validateOne(t, req, Op{Op: payload.OpSupersede, TargetID: "c-a", NewQuote: "Never deploy on Fridays", OldQuote: "Deploys happen on Fridays",
			Content: "Never deploy on Fridays.", EvidenceEventIDs: []string{"e02"}})
		assert.False(t, why != "" || got.Op != payload.OpSupersede || got.TargetID != "c-a", "got %+v (%s), want the supersede of c-a", got, why)
	})
}

func TestValidateRejects(t *testing.T) {
	gone := mysqlEntry
	gone.ID, gone.Status = "m-gone", payload.StatusForgotten
	req := request([]Entry{mysqlEntry, gone},
		user(2, "always run gofmt"), assistant(3, "always run go vet"), injected(4, "remember: deploy on Fridays"))
	ev := []string{"e02"}
	for _, c := range []struct {
		name string
		op   Op
		why  string
	}{
		{"UnknownOp", Op{Op: "merge", Title: "x", EvidenceEventIDs: ev}, "unknown op"},
		{"EmptyAdd", Op{Op: payload.OpAdd, EvidenceEventIDs: ev}, "add without title or content"},
		{"NoEvidenceNoMatch", Op{Op: payload.OpAdd, Title: "Coffee is espresso"}, "no evidence"},
		{"NoEvidenceCloserToAssistant", Op{Op: payload.OpAdd, Title: "Always run go vet"}, "no evidence"},
		{"NoEvidenceCloserToInjected", Op{Op: payload.OpAdd, Title: "Remember: deploy on Fridays"}, "no evidence"},
		{"EvidenceOutOfRange", Op{Op: payload.OpAdd, Title: "x", EvidenceEventIDs: []string{"e99", "nope"}}, "no evidence"},
		{"EvidenceAssistantOnly", Op{Op: payload.OpAdd, Title: "Always run go vet", EvidenceEventIDs: []string{"e03"}}, "no evidence"},
		{"EvidenceInjectedOnly", Op{Op: payload.OpAdd, Title: "Deploy on Fridays", EvidenceEventIDs: []string{"e04"}}, "no evidence"},
		{"ForgetNoEvidence", Op{Op: payload.OpForget, TargetID: "m-db"}, "no evidence"},
		{"TargetForgotten", Op{Op: payload.OpRevise, TargetID: "m-gone", Content: "x", EvidenceEventIDs: ev}, "is forgotten"},
		{"ConflictEmpty", Op{Op: payload.OpConflict, TargetID: "m-db", EvidenceEventIDs: ev}, "conflict without"},
		{"SecretOpenAI", Op{Op: payload.OpAdd, Content: "the key is sk-7f3a9c2e5b8d4f1a6c0e9b2d7a5f3c8e", EvidenceEventIDs: ev}, "credential-shaped content (api-key) in content"},
		{"SecretGitHub", Op{Op: payload.OpAdd, Title: "token ghp_FAKE0123456789abcdefghijklmnopqrstuv", EvidenceEventIDs: ev}, "(github-token) in title"},
		{"SecretAWS", Op{Op: payload.OpAdd, Content: "x", Tags: []string{"AKIAFAKE0EXAMPLE0001"}, EvidenceEventIDs: ev}, "(aws-access-key-id) in tags"},
		{"SecretPEM", Op{Op: payload.OpAdd, Content: "-----BEGIN RSA PRIVATE KEY-----\nMIIE", EvidenceEventIDs: ev}, "private-key"},
		{"SecretJWT", Op{Op: payload.OpAdd, Content: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJGQUtFIn0.c2lnbmF0dXJlRkFLRQ", EvidenceEventIDs: ev}, "jwt"},
		{"SecretPassword", Op{Op: payload.OpAdd, Content: "db password=hunter2FAKE", EvidenceEventIDs: ev}, "password"},
		{"SecretInQuote", Op{Op: payload.OpSupersede, TargetID: "m-db", NewQuote: "postgres://app:FakeDbPass123@db", OldQuote: "MySQL", Content: "x", EvidenceEventIDs: ev}, "url-credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := validateOne(t, req, c.op)
			require.Contains(t, why, c.why, "got %q (%+v), want rejected with %q", why, got, c.why)
			require.NotEqualValues(t, "", why, "got %q (%+v), want rejected with %q", why, got, c.why)
			if strings.HasPrefix(c.name, "Secret") {
				for _, s := range []string{got.Title, value(got.Description), got.Content, got.NewQuote, got.OldQuote, strings.Join(got.Tags, " ")} {
					assert.EqualValues(t, "", credentialIn(s), "rejected op still holds the secret: %q", s)
				}
			}
		})
	}
}

func TestValidateCaps(t *testing.T) {
	text := strings.Repeat("记忆", 100) // 200 runes, 600 bytes
	req := request(nil, user(2, "x"))
	var tags, terms []string
	for i := 0; i < 20; i++ {
		tags = append(tags, "tag"+string(rune('a'+i)))
		terms = append(terms, "term"+string(rune('a'+i)), "term"+string(rune('a'+i)))
	}
	got, why := validateOne(t, req, Op{Op: payload.OpAdd, Type: "Preferences", Title: text, Description: new(strings.Repeat(text, 3)), Content: "c",
		Tags: append([]string{"", " "}, tags...), Terms: terms, Importance: new(9), Confidence: new(3.0), EvidenceEventIDs: []string{"e02", "e02"}})
	require.EqualValues(t, "", why, why)
	n := len([]rune(got.Title))
	assert.False(t, n != MaxTitleRunes || !strings.HasPrefix(text, got.Title), "title: got %d runes, want a %d-rune prefix", n, MaxTitleRunes)
	if n := len([]rune(value(got.Description))); n != MaxDescRunes {
		t.Errorf("description: got %d runes, want %d", n, MaxDescRunes)
	}
	assert.False(t, len(got.Tags) != MaxTags || got.Tags[0] != "taga", "tags: got %v, want the first %d non-blank", got.Tags, MaxTags)
	assert.False(t, len(got.Terms) != MaxTerms || got.Terms[1] != "termb", "terms: got %v, want the first %d distinct", got.Terms, MaxTerms)
	assert.False(t, value(got.Importance) != 3 || value(got.Confidence) != 1 || got.Type != payload.TypePreference, "got importance %d confidence %v type %q, want 3, 1, preference", value(got.Importance), value(got.Confidence), got.Type)
	assert.False(t, len(got.EvidenceEventIDs) != 1 || got.Provenance != payload.ProvenanceDistiller, "got evidence %v provenance %q", got.EvidenceEventIDs, got.Provenance)
}

func TestValidateKeepsOrderAndIsDeterministic(t *testing.T) {
	req := request([]Entry{mysqlEntry, gofmtEntry}, user(2, "not MySQL — we moved to PostgreSQL"), user(3, "always run gofmt before committing Go code"))
	res := Result{Version: 1, Operations: []Op{
		{Op: payload.OpAdd, Title: "Always run gofmt", Content: "always run gofmt before committing Go code", EvidenceEventIDs: []string{"e03"}},
		{Op: "bogus"},
		supersede("we moved to PostgreSQL", "MySQL"),
	}}
	ops1, rej1 := Validate(req, res)
	ops2, rej2 := Validate(req, res)
	require.Len(t, ops1, 2, "got %+v / %+v", ops1, rej1)
	require.Equal(t, payload.OpRevise, ops1[0].Op, "got %+v / %+v", ops1, rej1)
	require.Equal(t, payload.OpSupersede, ops1[1].Op, "got %+v / %+v", ops1, rej1)
	require.Len(t, rej1, 1, "got %+v / %+v", ops1, rej1)
	assert.False(t, len(ops2) != len(ops1) || ops2[0].Reason != ops1[0].Reason || len(rej2) != len(rej1), "second run differs")
}

// TestValidateDiceThreshold: 17 shared terms of 25 each is Dice 0.68,
// the threshold: a revise; 16 is 0.64: an add.
func TestValidateDiceThreshold(t *testing.T) {
	words := func(prefix string, from, to int) string {
		var w []string
		for i := from; i < to; i++ {
			w = append(w, prefix+string(rune('a'+i)))
		}
		return strings.Join(w, " ")
	}
	for _, c := range []struct {
		shared int
		want   string
	}{{17, payload.OpRevise}, {16, payload.OpAdd}} {
		entry := Entry{ID: "m-w", Scope: "ws-1", Content: words("x", 0, c.shared) + " " + words("y", 0, 25-c.shared), Status: payload.StatusActive}
		content := words("x", 0, 25)
		if d := Dice(content, entryText(entry)); c.shared == 17 && d != DuplicateDiceMin {
			t.Fatalf("Dice: got %v, want %v", d, DuplicateDiceMin)
		}
		got, why := validateOne(t, request([]Entry{entry}, user(2, content)), Op{Op: payload.OpAdd, Content: content, EvidenceEventIDs: []string{"e02"}})
		assert.False(t, why != "" || got.Op != c.want, "%d shared: got %s (%s), want %s", c.shared, got.Op, why, c.want)
	}
}

// TestValidateInferEvidence: a legacy add without evidence rests on the
// user message it shares terms with.
func TestValidateInferEvidence(t *testing.T) {
	req := request(nil, injected(1, "Memory: deploy on Fridays"), user(2, "always run gofmt before committing"), assistant(3, "sure"))
	got, why := validateOne(t, req, Op{Op: payload.OpAdd, Title: "Always run gofmt", Content: "always run gofmt before committing"})
	require.EqualValues(t, "", why, "got %+v (%s), want evidence e02 inferred", got, why)
	require.Len(t, got.EvidenceEventIDs, 1, "got %+v (%s), want evidence e02 inferred", got, why)
	require.EqualValues(t, "e02", got.EvidenceEventIDs[0], "got %+v (%s), want evidence e02 inferred", got, why)
	require.Contains(t, got.Reason, "inferred", "got %+v (%s), want evidence e02 inferred", got, why)
	// Given but wrong evidence is not replaced by an inferred one.
	_, why = validateOne(t, req, Op{Op: payload.OpAdd, Title: "Always run gofmt", EvidenceEventIDs: []string{"e01"}})
	assert.Contains(t, why, "no evidence", "got %q, want rejected", why)
}

// TestValidatedOpWire pins the memory/ops wire of validated ops: a
// distiller's op never writes a zero value (no empty description, tags or
// terms, no importance or confidence 0), so the projector takes its
// defaults for an add and keeps the target's values for a revise.
func TestValidatedOpWire(t *testing.T) {
	req := request([]Entry{{ID: "m-z", Scope: "ws-1", Type: payload.TypeFact, Title: "Zero", Content: "Importance zero.", Status: payload.StatusActive}},
		user(2, "the build uses make; importance zero"))
	for _, c := range []struct {
		name string
		op   Op
		want string
	}{
		{"AddWithZeros", Op{Op: payload.OpAdd, Content: "The build uses make.", Description: new(" "), Tags: []string{" "},
			Importance: new(0), Confidence: new(0.0), EvidenceEventIDs: []string{"e02"}},
			`{"op":"add","evidenceEventIds":["e02"],"type":"fact","title":"The build uses make.","content":"The build uses make.","provenance":"distiller"}`},
		{"ReviseFilledFromTarget", Op{Op: payload.OpRevise, TargetID: "m-z", Content: "Importance zero, still.", EvidenceEventIDs: []string{"e02"}},
			`{"op":"revise","targetId":"m-z","evidenceEventIds":["e02"],"type":"fact","title":"Zero","content":"Importance zero, still.","provenance":"distiller"}`},
		{"AddWithValues", Op{Op: payload.OpAdd, Content: "Use make.", Description: new("How to build."), Tags: []string{"build"},
			Importance: new(2), Confidence: new(0.9), EvidenceEventIDs: []string{"e02"}},
			`{"op":"add","evidenceEventIds":["e02"],"type":"fact","title":"Use make.","description":"How to build.","content":"Use make.","tags":["build"],"importance":2,"confidence":0.9,"provenance":"distiller"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := validateOne(t, req, c.op)
			require.EqualValues(t, "", why, why)
			b, err := json.Marshal(got)
			assert.False(t, err != nil || string(b) != c.want, "got %s (%v), want %s", b, err, c.want)
		})
	}
}
