package observer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/observer/distill"
	"dshmem/projector"
	"dshmem/sqlstore"
)

// Errors of explicit memory writes.
var (
	// ErrUnknownEntry is returned (wrapped, with the id) for an entry id
	// the index does not hold.
	ErrUnknownEntry = errors.New("no such entry")
	// ErrEntryForgotten is returned (wrapped, with the id) when forgetting
	// an entry that is already forgotten.
	ErrEntryForgotten = errors.New("entry already forgotten")
)

// RefusedError is an explicit memory write that intake refused (content
// that is only a secret, an event over the size limit, …): nothing was
// written.
type RefusedError struct {
	Field string // "content", "title", … ("" for the event as a whole)
	Msg   string
}

func (e *RefusedError) Error() string {
	if e.Field == "" {
		return "refused: " + e.Msg
	}
	return "refused: " + e.Field + " " + e.Msg
}

// Entry is one memory entry as the index holds it (ARCHITECTURE §5).
// Its JSON form is what `dshmem entries --json` prints.
type Entry struct {
	ID            string          `json:"id"`
	Scope         string          `json:"scope"`
	Type          string          `json:"type"`
	Title         string          `json:"title"`
	Description   string          `json:"description,omitempty"`
	Terms         string          `json:"terms,omitempty"` // ", "-separated
	Content       string          `json:"content"`
	Tags          []string        `json:"tags"`
	Importance    int             `json:"importance"`
	Confidence    float64         `json:"confidence"`
	Status        string          `json:"status"`
	ConflictGroup string          `json:"conflictGroup,omitempty"`
	Supersedes    string          `json:"supersedes,omitempty"`
	SupersededBy  string          `json:"supersededBy,omitempty"`
	Provenance    json.RawMessage `json:"provenance"` // {"eventIds":[…],"reason":…,"source":…,"checkpoint":…}
	CreatedAt     string          `json:"createdAt"`
	UpdatedAt     string          `json:"updatedAt"`
	Version       int64           `json:"version"`
	CreatedSeq    uint64          `json:"createdSeq"`
	UpdatedSeq    uint64          `json:"updatedSeq"`
}

// Distill is e as a distiller's context.
func (e Entry) Distill() distill.Entry {
	var terms []string
	for _, t := range strings.Split(e.Terms, ",") {
		if t = strings.TrimSpace(t); t != "" {
			terms = append(terms, t)
		}
	}
	return distill.Entry{
		ID: e.ID, Scope: e.Scope, Type: e.Type, Title: e.Title, Description: e.Description, Content: e.Content,
		Tags: e.Tags, Terms: terms, Importance: e.Importance, Status: e.Status, ConflictGroup: e.ConflictGroup,
	}
}

// EntryVersion is one version of an entry: its state after an op, and
// the event that made it.
type EntryVersion struct {
	EntryID     string   `json:"entryId"`
	Version     int64    `json:"version"`
	Op          string   `json:"op"` // add | revise | supersede | conflict | forget | resolve
	Stream      string   `json:"stream"`
	Seq         uint64   `json:"seq"`
	EventID     string   `json:"eventId"`
	EventType   string   `json:"eventType"`            // memory/remember, memory/ops, memory/forget
	Checkpoint  string   `json:"checkpoint,omitempty"` // of a memory/ops event
	Time        string   `json:"time"`
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Terms       string   `json:"terms,omitempty"`
	Content     string   `json:"content"`
	Tags        []string `json:"tags"`
	Importance  int      `json:"importance"`
	Confidence  float64  `json:"confidence"`
	Status      string   `json:"status"`
	Reason      string   `json:"reason,omitempty"`
}

// EntryFilter selects entries; the zero value selects all of them.
type EntryFilter struct {
	Scopes   []string // streams; empty: every stream
	Statuses []string // empty: every status
}

// Entry, EntryVersion and EntryFilter have the fields of their sqlstore
// namesakes in the same order, so that the index's rows convert to them;
// they add the JSON form the API and the CLI print.

// Entries lists the entries f selects, by scope and then in the order
// they were created.
func (e *Engine) Entries(ctx context.Context, f EntryFilter) ([]Entry, error) {
	rows, err := e.store.Entries(ctx, sqlstore.EntryFilter(f))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, r := range rows {
		out = append(out, Entry(r))
	}
	return out, nil
}

// Entry returns the entry with id, or an error wrapping ErrUnknownEntry.
func (e *Engine) Entry(ctx context.Context, id string) (Entry, error) {
	en, ok, err := e.store.Entry(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, fmt.Errorf("%w: %s (list the ids with 'dshmem entries')", ErrUnknownEntry, id)
	}
	return Entry(en), nil
}

// History returns every version of entry id, oldest first, each with the
// event that made it.
func (e *Engine) History(ctx context.Context, id string) ([]EntryVersion, error) {
	if _, err := e.Entry(ctx, id); err != nil {
		return nil, err
	}
	vs, err := e.store.EntryHistory(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []EntryVersion
	for _, v := range vs {
		out = append(out, EntryVersion(v))
	}
	return out, nil
}

// RememberRequest is an explicit memory: `dshmem remember`, or the
// host's remember tool.
type RememberRequest struct {
	Cwd        string   // the workspace it belongs to; "" remembers it globally
	Content    string   // required
	Title      string   // default: the first line of Content
	Type       string   // preference|decision|architecture|rule|fact|fix|procedure; default fact
	Tags       []string //
	Importance *int     // 0–3; nil: the default (1)
	// Time is the event time; zero means now.
	Time time.Time
	// Received is when the request was received (its server's clock,
	// with its monotonic reading); zero means when Remember is called.
	Received time.Time
}

// Remember writes a memory/remember event through intake (validation,
// redaction, stream resolution) and returns the entry it made: its id is
// projector.EntryID of the event. Content that is nothing but a secret
// is a *RefusedError and writes nothing.
func (e *Engine) Remember(ctx context.Context, r RememberRequest) (Entry, error) {
	if strings.TrimSpace(r.Content) == "" {
		return Entry{}, &RefusedError{Field: "content", Msg: "is empty; say what to remember"}
	}
	raw, err := payload.Marshal(payload.Remember{Content: r.Content, Title: r.Title, Type: r.Type, Tags: r.Tags, Importance: r.Importance})
	if err != nil {
		return Entry{}, fmt.Errorf("remember: %w", err)
	}
	// The event's id is the text and its scope: a remember sent again
	// (its answer lost to a cancelled request, a dropped connection or
	// a crash) is a duplicate of the first, and the entry it made is the
	// answer. One lock per id (striped) and a write its caller cannot
	// cancel make the second wait until the first is folded, so the
	// entry is there to be found.
	id := rememberID(r.Cwd, r.Content)
	received := r.Received
	if received.IsZero() {
		received = time.Now()
	}
	caller := ctx
	mu := &rememberLocks[id[0]%byte(len(rememberLocks))]
	mu.Lock()
	defer mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	base := "dshmem:remember:" + id
	env := events.Envelope{V: events.CurrentVersion, ID: base, Type: events.TypeMemoryRemember,
		Time: EventTime(r.Time), Cwd: r.Cwd, Data: raw}
	o, err := e.appendOwn(ctx, env)
	// The same text remembered after its entry was forgotten is a new
	// entry, under the id's next renewal (<id>:2, <id>:3, …): a renewal
	// sent again is a duplicate of that one in turn.
	for renewal := 2; err != nil && o.Status == StatusDuplicate; renewal++ {
		en, lerr := e.rememberedAs(ctx, o.Stream, env.ID)
		if lerr != nil || en.Status != payload.StatusForgotten {
			return en, lerr
		}
		// A remember received before the forget of the entry was
		// appended is the remember that made it over again, only late
		// (its client gave up, sent it again, and that answer was
		// forgotten since); so is one whose caller has gone: the answer
		// is the entry as it now is.
		if e.forgets.since(en.ID, received) || caller.Err() != nil {
			return en, nil
		}
		env.ID = base + ":" + strconv.Itoa(renewal)
		o, err = e.appendOwn(ctx, env)
	}
	if err != nil {
		return Entry{}, err
	}
	if o.made != nil {
		return Entry(*o.made), nil
	}
	return e.Entry(ctx, projector.EntryID(o.Stream, o.Seq, 0))
}

// rememberLocks serialize the remembers of one id (Remember).
var rememberLocks [32]sync.Mutex

// rememberID is the id of the remember event of content in the scope of
// cwd ("" is global): 16 hex digits of a SHA-256, which names the text
// without holding it.
func rememberID(cwd, content string) string {
	scope := "global"
	if cwd != "" {
		scope = "cwd:" + NormalizeCwd(cwd)
	}
	sum := sha256.Sum256([]byte(scope + "\x00" + strings.TrimSpace(content)))
	return hex.EncodeToString(sum[:8])
}

// rememberedAs is the entry the remember event id of stream made.
func (e *Engine) rememberedAs(ctx context.Context, stream, id string) (Entry, error) {
	held, err := e.store.ExistingEvents(ctx, stream, []string{id})
	if err != nil {
		return Entry{}, err
	}
	ev, ok := held[id]
	if !ok {
		return Entry{}, fmt.Errorf("remember: the same text is being written to %s right now; try again", stream)
	}
	return e.Entry(ctx, projector.EntryID(stream, ev.Seq, 0))
}

// Forget writes a memory/forget event for entry id into the entry's own
// stream and returns the entry as it now is. An id the index does not
// hold (ErrUnknownEntry) or an entry already forgotten
// (ErrEntryForgotten) is refused before anything is written.
func (e *Engine) Forget(ctx context.Context, id, reason string) (Entry, error) {
	en, err := e.Entry(ctx, id)
	if err != nil {
		return Entry{}, err
	}
	if en.Status == payload.StatusForgotten {
		return Entry{}, fmt.Errorf("%w: %s was forgotten at %s", ErrEntryForgotten, id, en.UpdatedAt)
	}
	raw, err := payload.Marshal(payload.Forget{EntryID: id, Reason: reason})
	if err != nil {
		return Entry{}, fmt.Errorf("forget %s: %w", id, err)
	}
	rid, err := RandomHex()
	if err != nil {
		return Entry{}, err
	}
	// The projector applies a forget only to entries of the event's own
	// stream, so the event goes to the entry's scope.
	env := events.Envelope{V: events.CurrentVersion, ID: "dshmem:forget:" + rid, Type: events.TypeMemoryForget,
		Time: EventTime(time.Time{}), Stream: en.Scope, Data: raw}
	if _, err := e.appendOwn(ctx, env); err != nil {
		return Entry{}, err
	}
	return e.Entry(ctx, id)
}

// appendOwn sends one event of the engine's own through intake and returns
// its outcome; a refused event is a *RefusedError.
func (e *Engine) appendOwn(ctx context.Context, env events.Envelope) (Outcome, error) {
	line, err := events.Marshal(&env)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode %s: %w", env.Type, err)
	}
	_, outs, err := e.Ingest(ctx, [][]byte{line})
	if err != nil {
		return Outcome{}, fmt.Errorf("write %s: %w", env.Type, err)
	}
	o := outs[0]
	switch o.Status {
	case StatusRejected:
		if d, ok := e.log.QuarantinedStream(o.Stream); ok && o.Stream != "" {
			// Not the input's fault: the stream is damaged.
			return o, fmt.Errorf("write %s: %w", env.Type, &events.QuarantinedError{Damage: d})
		}
		r := &RefusedError{Msg: "the event was refused"}
		if o.Error != nil {
			r.Field, r.Msg = strings.TrimPrefix(o.Error.Field, "data."), o.Error.Msg
		}
		return o, r
	case StatusDuplicate:
		return o, fmt.Errorf("write %s: id %s is already in stream %s", env.Type, env.ID, o.Stream)
	}
	return o, nil
}

// EventTime formats t as the time of an event the engine writes itself;
// a zero t means now.
func EventTime(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// RandomHex returns 16 random hex digits, for the ids of events the
// engine writes itself.
func RandomHex() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
