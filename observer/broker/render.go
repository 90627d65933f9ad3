package broker

import (
	"strings"

	"dshmem/markdown"
)

// The text of a packet: its frame and entries, cut to the byte budget on
// rune boundaries.

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// renderPacket frames the entries as reference text within budget bytes,
// dropping entries that do not fit (at least the first stays, cut). A
// prefetch has no text.
func renderPacket(mode string, es []PacketEntry, budget int) (string, []PacketEntry) {
	if mode == ModePrefetch || mode == ModeNone {
		for i := range es {
			es[i].Text = markdown.CutUTF8(es[i].Text, budget)
		}
		return "", es
	}
	var b strings.Builder
	b.WriteString(PacketFrame)
	b.WriteString("\n")
	if mode == ModeChecklist {
		if len(es) > 0 && es[0].Procedure {
			b.WriteString("A procedure that worked in this workspace before — check against it:\n")
		} else {
			b.WriteString("Things that went wrong here before — check against them:\n")
		}
	}
	kept := es[:0]
	for i, e := range es {
		body := strings.Join(strings.Fields(e.Text), " ")
		title := strings.Join(strings.Fields(e.Title), " ")
		line := "- " + title
		if e.LowConfidence {
			line += " [low confidence]"
		}
		if body != "" && body != title {
			line += ": " + body
		}
		suffix := " (" + e.ID + ")\n"
		room := budget - b.Len() - len(suffix)
		if room < 24 {
			if i == 0 {
				room = max(room, 0)
			} else {
				break
			}
		}
		if len(line) > room {
			line = markdown.CutUTF8(line, max(room-len("…"), 0)) + "…"
		}
		b.WriteString(line + suffix)
		kept = append(kept, e)
	}
	return markdown.CutUTF8(strings.TrimRight(b.String(), "\n"), budget), kept
}
