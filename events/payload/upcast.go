package payload

import (
	"bytes"
	"encoding/json"
	"errors"
)

// This file is the one place where stored data is read. A log written
// today must stay readable forever, so whatever shape a log may hold —
// what older producers wrote, what hosts send their own way — is turned
// into today's shape here, and folds see only that.
//
// Each UnmarshalJSON follows the rules of Unmarshal: the fields a fold
// depends on (the package documentation lists them) decode with
// encoding/json's rules or fail the event; every other field is best
// effort. The message types, which are most of a log, first try one
// plain decode of the whole object and take the careful path only when
// that fails; both give the same result for data that decodes.

// lenient decodes the JSON object b into v, a pointer to a struct,
// keeping whatever decodes: a field of another shape is left zero (a
// list keeps the items that decode) and is no error. Data that is not an
// object, and invalid JSON, are errors.
func lenient(b []byte, v any) error {
	err := json.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && isObject(b) {
		return nil
	}
	return err
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

// bestEffort decodes raw, when it is there, into v, keeping whatever
// decodes.
func bestEffort(raw json.RawMessage, v any) {
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, v)
	}
}

// given reports whether a field is there and not null.
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// stringList reads a list of strings. Absent or null is nil (not given).
// Anything else is given, so the result is not nil: an array keeps the
// items that are strings ("" in place of the others, as encoding/json
// leaves them), and any other value (a string "a, b", a number) is an
// empty list. Folds have always read tags so.
func stringList(raw json.RawMessage) []string {
	if !given(raw) {
		return nil
	}
	var l []string
	_ = json.Unmarshal(raw, &l)
	if l == nil {
		l = []string{}
	}
	return l
}

// termList reads an op's terms: a list of strings as stringList, or one
// string, which is the list of that one string (the fold joins terms
// with ", ", so one string stays what it was).
func termList(raw json.RawMessage) []string {
	var s string
	if given(raw) && json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	return stringList(raw)
}

// importance reads an importance: any JSON number, clamped to 0–3 and
// truncated (ClampImportance); older producers wrote floats. Absent, or
// a value that is not a number ("2", true), is nil: the default. null is
// 0, because the folds have always read it so and replay must agree with
// what they wrote.
func importance(raw json.RawMessage) *int {
	var v float64
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	n := ClampImportance(v)
	return &n
}

// confidence reads a confidence as importance reads an importance,
// clamped to 0–1 (ClampConfidence); null is 0.
func confidence(raw json.RawMessage) *float64 {
	var v float64
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	c := ClampConfidence(v)
	return &c
}

func (s *SessionStart) UnmarshalJSON(b []byte) error {
	// Every field is best effort: a malformed start still starts the
	// session.
	type plain SessionStart
	var p plain
	err := lenient(b, &p)
	*s = SessionStart(p)
	return err
}

func (s *SessionEnd) UnmarshalJSON(b []byte) error {
	type plain SessionEnd
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*s = SessionEnd(p)
		return nil
	}
	var w struct {
		Reason  json.RawMessage `json:"reason"`
		Summary string          `json:"summary"`
	}
	err := json.Unmarshal(b, &w)
	*s = SessionEnd{Summary: w.Summary}
	bestEffort(w.Reason, &s.Reason)
	return err
}

func (m *UserMessage) UnmarshalJSON(b []byte) error {
	type plain UserMessage
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*m = UserMessage(p)
		return nil
	}
	var w struct {
		Text      string          `json:"text"`
		Source    json.RawMessage `json:"source"`
		Injected  bool            `json:"injected"`
		MessageID json.RawMessage `json:"messageId"`
	}
	err := json.Unmarshal(b, &w)
	*m = UserMessage{Text: w.Text, Injected: w.Injected}
	if given(w.Source) {
		m.Source = new(Source)
		bestEffort(w.Source, m.Source)
	}
	bestEffort(w.MessageID, &m.MessageID)
	return err
}

func (m *AssistantMessage) UnmarshalJSON(b []byte) error {
	type plain AssistantMessage
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*m = AssistantMessage(p)
		return nil
	}
	var w struct {
		Text     string          `json:"text"`
		Injected bool            `json:"injected"`
		Turn     json.RawMessage `json:"turn"`
		Step     json.RawMessage `json:"step"`
	}
	err := json.Unmarshal(b, &w)
	*m = AssistantMessage{Text: w.Text, Injected: w.Injected}
	bestEffort(w.Turn, &m.Turn)
	bestEffort(w.Step, &m.Step)
	return err
}

func (c *ToolCall) UnmarshalJSON(b []byte) error {
	type plain ToolCall
	var p plain
	err := lenient(b, &p)
	*c = ToolCall(p)
	return err
}

func (r *ToolResult) UnmarshalJSON(b []byte) error {
	type plain ToolResult
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*r = ToolResult(p)
		return nil
	}
	var w struct {
		Name     json.RawMessage `json:"name"`
		OK       json.RawMessage `json:"ok"`
		Text     string          `json:"text"`
		Error    json.RawMessage `json:"error"`
		CallID   json.RawMessage `json:"callId"`
		Turn     json.RawMessage `json:"turn"`
		Step     json.RawMessage `json:"step"`
		Injected bool            `json:"injected"`
	}
	err := json.Unmarshal(b, &w)
	*r = ToolResult{Text: w.Text, Injected: w.Injected}
	bestEffort(w.Name, &r.Name)
	bestEffort(w.OK, &r.OK)
	bestEffort(w.Error, &r.Error)
	bestEffort(w.CallID, &r.CallID)
	bestEffort(w.Turn, &r.Turn)
	bestEffort(w.Step, &r.Step)
	return err
}

func (c *CompactionSummary) UnmarshalJSON(b []byte) error {
	type plain CompactionSummary
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*c = CompactionSummary(p)
		return nil
	}
	// injected is best effort here: no producer writes it on a summary,
	// and a malformed flag must not cost the day file its block.
	var w struct {
		CompactionID string          `json:"compactionId"`
		Text         string          `json:"text"`
		LegacySource json.RawMessage `json:"legacySource"`
		Injected     json.RawMessage `json:"injected"`
	}
	err := json.Unmarshal(b, &w)
	*c = CompactionSummary{CompactionID: w.CompactionID, Text: w.Text}
	bestEffort(w.LegacySource, &c.LegacySource)
	bestEffort(w.Injected, &c.Injected)
	return err
}

func (t *TurnEnd) UnmarshalJSON(b []byte) error {
	type plain TurnEnd
	var p plain
	err := lenient(b, &p)
	*t = TurnEnd(p)
	return err
}

func (t *TaskEnd) UnmarshalJSON(b []byte) error {
	type plain TaskEnd
	var p plain
	if json.Unmarshal(b, &p) == nil {
		*t = TaskEnd(p)
		return nil
	}
	var w struct {
		TaskID  json.RawMessage `json:"taskId"`
		Request string          `json:"request"`
		Result  string          `json:"result"`
		Status  json.RawMessage `json:"status"`
	}
	err := json.Unmarshal(b, &w)
	*t = TaskEnd{Request: w.Request, Result: w.Result}
	bestEffort(w.TaskID, &t.TaskID)
	bestEffort(w.Status, &t.Status)
	return err
}

func (r *Remember) UnmarshalJSON(b []byte) error {
	// Tags and importance have had other shapes (stringList,
	// importance); terms is one string.
	var w struct {
		Content     string          `json:"content"`
		Title       string          `json:"title"`
		Type        string          `json:"type"`
		Description string          `json:"description"`
		Terms       string          `json:"terms"`
		Tags        json.RawMessage `json:"tags"`
		Importance  json.RawMessage `json:"importance"`
		Legacy      json.RawMessage `json:"legacy"`
	}
	err := json.Unmarshal(b, &w)
	*r = Remember{
		Content: w.Content, Title: w.Title, Type: w.Type, Description: w.Description, Terms: w.Terms,
		Tags: stringList(w.Tags), Importance: importance(w.Importance),
	}
	if given(w.Legacy) {
		r.Legacy = new(LegacyMeta)
		bestEffort(w.Legacy, r.Legacy)
	}
	return err
}

func (f *Forget) UnmarshalJSON(b []byte) error {
	type plain Forget
	var p plain
	err := json.Unmarshal(b, &p)
	*f = Forget(p)
	return err
}

func (o *Ops) UnmarshalJSON(b []byte) error {
	var w struct {
		Checkpoint string            `json:"checkpoint"`
		Session    json.RawMessage   `json:"session"`
		From       json.RawMessage   `json:"from"`
		To         json.RawMessage   `json:"to"`
		Distiller  json.RawMessage   `json:"distiller"`
		Model      json.RawMessage   `json:"model"`
		Ops        []json.RawMessage `json:"ops"`
	}
	err := json.Unmarshal(b, &w)
	*o = Ops{Checkpoint: w.Checkpoint}
	bestEffort(w.Session, &o.Session)
	bestEffort(w.From, &o.From)
	bestEffort(w.To, &o.To)
	bestEffort(w.Distiller, &o.Distiller)
	bestEffort(w.Model, &o.Model)
	if w.Ops != nil {
		// Each op is decoded on its own, so one malformed op does not
		// hide the others; it stays in its place as the zero Op (no op
		// name, which no fold applies), since ops are numbered by
		// position (projector.EntryID).
		o.Ops = make([]Op, len(w.Ops))
		for i, raw := range w.Ops {
			if json.Unmarshal(raw, &o.Ops[i]) != nil {
				o.Ops[i] = Op{}
			}
		}
	}
	return err
}

func (o *Op) UnmarshalJSON(b []byte) error {
	// Tags, terms, importance and confidence have had other shapes
	// (stringList, termList, importance, confidence). A pointer or list
	// left nil means not given.
	var w struct {
		Op               string          `json:"op"`
		TargetID         string          `json:"targetId"`
		OldQuote         json.RawMessage `json:"oldQuote"`
		NewQuote         json.RawMessage `json:"newQuote"`
		EvidenceEventIDs []string        `json:"evidenceEventIds"`
		Type             string          `json:"type"`
		Title            string          `json:"title"`
		Description      *string         `json:"description"`
		Content          string          `json:"content"`
		Tags             json.RawMessage `json:"tags"`
		Terms            json.RawMessage `json:"terms"`
		Importance       json.RawMessage `json:"importance"`
		Confidence       json.RawMessage `json:"confidence"`
		Reason           string          `json:"reason"`
		Provenance       string          `json:"provenance"`
		Delta            json.RawMessage `json:"delta"`
		Alias            json.RawMessage `json:"alias"`
		Expansion        json.RawMessage `json:"expansion"`
		Procedure        json.RawMessage `json:"procedure"`
	}
	err := json.Unmarshal(b, &w)
	*o = Op{
		Op: w.Op, TargetID: w.TargetID, EvidenceEventIDs: w.EvidenceEventIDs,
		Type: w.Type, Title: w.Title, Description: w.Description, Content: w.Content,
		Tags: stringList(w.Tags), Terms: termList(w.Terms),
		Importance: importance(w.Importance), Confidence: confidence(w.Confidence),
		Reason: w.Reason, Provenance: w.Provenance,
	}
	bestEffort(w.OldQuote, &o.OldQuote)
	bestEffort(w.NewQuote, &o.NewQuote)
	bestEffort(w.Alias, &o.Alias)
	bestEffort(w.Expansion, &o.Expansion)
	if given(w.Delta) {
		var d float64
		if json.Unmarshal(w.Delta, &d) == nil {
			o.Delta = &d
		}
	}
	if given(w.Procedure) {
		var p Procedure
		if json.Unmarshal(w.Procedure, &p) == nil {
			o.Procedure = &p
		}
	}
	return err
}

func (s *Shown) UnmarshalJSON(b []byte) error {
	var w struct {
		Entries []string        `json:"entries"`
		Session string          `json:"session"`
		Mode    json.RawMessage `json:"mode"`
	}
	err := json.Unmarshal(b, &w)
	*s = Shown{Entries: w.Entries, Session: w.Session}
	bestEffort(w.Mode, &s.Mode)
	return err
}

func (f *FileEdit) UnmarshalJSON(b []byte) error {
	type plain FileEdit
	var p plain
	err := lenient(b, &p)
	*f = FileEdit(p)
	return err
}

func (s *ScopeRegister) UnmarshalJSON(b []byte) error {
	type plain ScopeRegister
	var p plain
	err := json.Unmarshal(b, &p)
	*s = ScopeRegister(p)
	return err
}

func (s *ScopePurge) UnmarshalJSON(b []byte) error {
	type plain ScopePurge
	var p plain
	err := json.Unmarshal(b, &p)
	*s = ScopePurge(p)
	return err
}

func (s *ScopeArchive) UnmarshalJSON(b []byte) error      { return lenient(b, &struct{}{}) }
func (s *ScopeRestore) UnmarshalJSON(b []byte) error      { return lenient(b, &struct{}{}) }
func (m *MaintenanceRotate) UnmarshalJSON(b []byte) error { return lenient(b, (*plainRotate)(m)) }
func (m *MaintenanceBackup) UnmarshalJSON(b []byte) error { return lenient(b, (*plainBackup)(m)) }

// The payloads without methods, for decoding them with encoding/json.
type (
	plainRotate MaintenanceRotate
	plainBackup MaintenanceBackup
)
