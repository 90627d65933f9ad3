package distilleval

import (
	"context"
	"fmt"
	"strings"

	"dshmem/events/payload"
	"dshmem/observer/distill"
)

// Stream is the stream of every request and the scope of every entry.
const Stream = "eval"

// Request is the distill.Request a case is fed as (see the package
// documentation): turns and utterance as messages, the utterance alone
// claimed, Related chosen by distill.SelectRelated.
func Request(c Case) distill.Request {
	turns := append(append([]Turn(nil), c.Context.Turns...), c.Utterance)
	msgs := make([]distill.Message, len(turns))
	for i, t := range turns {
		seq := uint64(i + 1)
		msgs[i] = distill.Message{
			EventID: EventID(c, seq), Seq: seq, Role: t.Role, Injected: t.Injected, Text: t.Text,
		}
	}
	entries := make([]distill.Entry, len(c.Context.Entries))
	for i, e := range c.Context.Entries {
		entries[i] = distill.Entry{
			ID: e.ID, Scope: Stream, Type: e.Type, Title: e.Title, Content: e.Content,
			Importance: 2, Status: payload.StatusActive,
		}
	}
	last := uint64(len(msgs))
	return distill.Request{
		Stream: Stream, Session: c.ID, From: last, To: last,
		Messages: msgs, Related: distill.SelectRelated(msgs, entries),
	}
}

// EventID is the event id of message seq of case c.
func EventID(c Case, seq uint64) string { return fmt.Sprintf("%s:%d", c.ID, seq) }

// Outcome is what a distiller did with one case.
type Outcome struct {
	Case     Case
	Got      []distill.Op // as Validate kept them
	Rejected []distill.Rejected
	Err      error // the distiller failed on this case
}

// Run feeds every case to d and validates its answer. A distiller error
// on a case is kept in its Outcome (scored as no op); only a cancelled ctx
// stops the run.
func Run(ctx context.Context, d distill.Distiller, cases []Case) ([]Outcome, error) {
	out := make([]Outcome, 0, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		req := Request(c)
		res, err := d.Distill(ctx, req)
		o := Outcome{Case: c, Err: err}
		if err == nil {
			o.Got, o.Rejected = distill.Validate(req, res)
		}
		out = append(out, o)
	}
	return out, nil
}

// Row is one line of the figures: an op kind (or "nothing", "all ops")
// in one language (or "all").
type Row struct {
	Op        string  `json:"op"`
	Lang      string  `json:"lang"`
	TP        int     `json:"tp"`
	FP        int     `json:"fp"`
	FN        int     `json:"fn"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// Confusion is a case whose ops were not exactly the expected ones.
type Confusion struct {
	Case     string   `json:"case"`
	Lang     string   `json:"lang"`
	Kind     string   `json:"kind"`
	Text     string   `json:"text"`
	Expected []string `json:"expected"` // unmatched expected ops
	Got      []string `json:"got"`      // unmatched got ops
	Rejected []string `json:"rejected,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Report holds the figures of one split.
type Report struct {
	Split      string      `json:"split"`
	Cases      int         `json:"cases"`
	Exact      int         `json:"exact"` // cases whose ops were exactly the expected ones
	Errors     int         `json:"errors"`
	Rows       []Row       `json:"rows"`
	Confusions []Confusion `json:"confusions"`
}

// Row kinds besides the op kinds.
const (
	RowNothing = "nothing"
	RowAll     = "all ops"
	LangAll    = "all"
)

// RowKinds is the order of the rows of a Report.
var RowKinds = append(append([]string(nil), payload.OpKinds...), RowNothing, RowAll)

// Languages is the order of the languages of a Report.
var Languages = []string{LangAll, "en", "zh"}

type counts struct{ tp, fp, fn int }

// Score computes the figures of one split from its outcomes.
func Score(split string, outcomes []Outcome) Report {
	r := Report{Split: split, Confusions: []Confusion{}}
	tally := make(map[[2]string]*counts)
	add := func(op, lang string, tp, fp, fn int) {
		for _, l := range []string{LangAll, lang} {
			k := [2]string{op, l}
			if tally[k] == nil {
				tally[k] = &counts{}
			}
			tally[k].tp += tp
			tally[k].fp += fp
			tally[k].fn += fn
		}
	}
	for _, o := range outcomes {
		r.Cases++
		if o.Err != nil {
			r.Errors++
		}
		lang := o.Case.Lang
		matchedExp, matchedGot := match(o.Case.Expect, o.Got)
		var cf Confusion
		for i, x := range o.Case.Expect {
			if matchedExp[i] {
				add(x.Op, lang, 1, 0, 0)
				add(RowAll, lang, 1, 0, 0)
			} else {
				add(x.Op, lang, 0, 0, 1)
				add(RowAll, lang, 0, 0, 1)
				cf.Expected = append(cf.Expected, expectString(x))
			}
		}
		for i, g := range o.Got {
			if !matchedGot[i] {
				add(g.Op, lang, 0, 1, 0)
				add(RowAll, lang, 0, 1, 0)
				cf.Got = append(cf.Got, opString(g))
			}
		}
		switch {
		case len(o.Case.Expect) == 0 && len(o.Got) == 0:
			add(RowNothing, lang, 1, 0, 0)
		case len(o.Case.Expect) == 0:
			add(RowNothing, lang, 0, 0, 1)
		case len(o.Got) == 0:
			add(RowNothing, lang, 0, 1, 0)
		}
		if cf.Expected == nil && cf.Got == nil && o.Err == nil {
			r.Exact++
			continue
		}
		cf.Case, cf.Lang, cf.Kind, cf.Text = o.Case.ID, lang, o.Case.Kind, o.Case.Utterance.Text
		for _, rj := range o.Rejected {
			cf.Rejected = append(cf.Rejected, opString(rj.Op)+": "+rj.Why)
		}
		if o.Err != nil {
			cf.Error = o.Err.Error()
		}
		if cf.Expected == nil {
			cf.Expected = []string{}
		}
		if cf.Got == nil {
			cf.Got = []string{}
		}
		r.Confusions = append(r.Confusions, cf)
	}
	for _, op := range RowKinds {
		for _, l := range Languages {
			c := tally[[2]string{op, l}]
			if c == nil {
				c = &counts{}
			}
			r.Rows = append(r.Rows, newRow(op, l, *c))
		}
	}
	return r
}

func newRow(op, lang string, c counts) Row {
	row := Row{Op: op, Lang: lang, TP: c.tp, FP: c.fp, FN: c.fn, Precision: 1, Recall: 1}
	if c.tp+c.fp > 0 {
		row.Precision = float64(c.tp) / float64(c.tp+c.fp)
	}
	if c.tp+c.fn > 0 {
		row.Recall = float64(c.tp) / float64(c.tp+c.fn)
	}
	if row.Precision+row.Recall > 0 {
		row.F1 = 2 * row.Precision * row.Recall / (row.Precision + row.Recall)
	}
	return row
}

// Find returns the row of op and lang.
func (r Report) Find(op, lang string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Op == op && row.Lang == lang {
			return row, true
		}
	}
	return Row{}, false
}

// match pairs expected and got ops (see the package documentation).
func match(exp []Expect, got []distill.Op) (matchedExp, matchedGot []bool) {
	matchedExp, matchedGot = make([]bool, len(exp)), make([]bool, len(got))
	for i, x := range exp {
		for j, g := range got {
			if !matchedGot[j] && matches(x, g) {
				matchedExp[i], matchedGot[j] = true, true
				break
			}
		}
	}
	return matchedExp, matchedGot
}

func matches(x Expect, g distill.Op) bool {
	if x.Op != g.Op {
		return false
	}
	if x.Op == payload.OpAdd {
		return x.Type == g.Type
	}
	return x.Target == g.TargetID
}

func expectString(x Expect) string {
	if x.Op == payload.OpAdd {
		return "add(" + x.Type + ")"
	}
	return x.Op + "(" + x.Target + ")"
}

func opString(o distill.Op) string {
	if o.Op == payload.OpAdd {
		return "add(" + o.Type + ")"
	}
	return strings.TrimSpace(o.Op + "(" + o.TargetID + ")")
}
