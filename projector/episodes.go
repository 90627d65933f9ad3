package projector

import (
	"encoding/json"
	"strings"
	"sync"

	"dshmem/events"
	"dshmem/events/payload"
	"dshmem/sqlstore/tokenize"
)

// EpisodeText returns the searchable text of an event of an episodic type
// and whether the host injected it into the conversation (memory handed
// back, a system reminder). ok is false for other types, for data that
// does not decode, and for empty text.
//
// The episode_texts view (migrations/00001_events.sql) and
// sqlstore.FetchEpisodes compute the same text in SQL from events.data; the
// projector tests hold the two to each other.
func EpisodeText(typ string, data json.RawMessage) (text string, injected bool, ok bool) {
	var err error
	switch typ {
	case events.TypeUserMessage:
		var d payload.UserMessage
		err = payload.Unmarshal(data, &d)
		text, injected = d.Text, d.Injected
	case events.TypeAssistantMessage:
		var d payload.AssistantMessage
		err = payload.Unmarshal(data, &d)
		text, injected = d.Text, d.Injected
	case events.TypeToolResult:
		var d payload.ToolResult
		err = payload.Unmarshal(data, &d)
		text, injected = d.Text, d.Injected
	case events.TypeCompactionSummary:
		var d payload.CompactionSummary
		err = payload.Unmarshal(data, &d)
		text, injected = d.Text, d.Injected
	case events.TypeTaskEnd:
		var d payload.TaskEnd
		err = payload.Unmarshal(data, &d)
		text = strings.Trim(d.Request+"\n"+d.Result, "\n")
	default:
		return "", false, false
	}
	if err != nil {
		return "", false, false
	}
	return text, injected, text != ""
}

// prepared is what the fold derives from one event without the database:
// the CPU-heavy half of folding (JSON, tokenizing), done by a second
// goroutine ahead of the inserts (see prepare in fold.go).
type prepared struct {
	episode  bool   // the event has searchable text
	text     string // that text
	injected bool
	terms    string // its distinct terms joined by spaces, for episodes_fts
}

func prepareEvent(ev *events.Envelope) prepared {
	text, injected, ok := EpisodeText(ev.Type, ev.Data)
	if !ok {
		return prepared{}
	}
	// detail=none keeps no counts or positions, so a repeated term would
	// only cost tokenizer and hash work inside FTS5.
	j := joiners.Get().(*tokenize.Joiner)
	terms := j.Terms(text)
	if !j.Large() {
		joiners.Put(j)
	}
	return prepared{episode: true, text: text, injected: injected, terms: terms}
}

// joiners hold the buffers of prepareEvent's term joins.
var joiners = sync.Pool{New: func() any { return new(tokenize.Joiner) }}

// episode indexes the text of event row n. Injected text stays searchable
// (it is what the model saw) but is flagged, so recall can rank it down
// and never re-inject memory as if the user had said it.
func (f *fold) episode(n int64, p *prepared) error {
	if !p.episode || p.terms == "" {
		return nil // no text, or only punctuation and emoji: nothing a query could match
	}
	return f.tx.InsertEpisode(n, p.injected, p.terms)
}
