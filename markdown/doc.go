// Package markdown renders dshmem's Markdown projections, parses edited
// ones back, and writes files atomically.
//
// It imports no package of dshmem: it renders and parses its own document
// types (Entry, Topic, SummaryInput, SessionBlock); the projector
// translates index rows into them. Every renderer is a pure function of
// its input — no clock, no map iteration, no randomness — and depends only
// on the set of entries it is given, not their order, so replaying the log
// reproduces every file byte for byte.
//
// # Files
//
//	global.md                        RenderGlobal     stable layer, no timestamps
//	index.md                         RenderIndex      topic links and one line per entry; navigation only
//	knowledge/<TopicFile(topic)>     RenderKnowledge  same layout as global.md
//	scopes/ws-<id>/memory_summary.md RenderSummary    bounded (3000 bytes), lossy view
//	sessions/YYYY-MM-DD.md           RenderSessionDay compaction and session summaries
//
// Entry files (global.md, knowledge/*.md) are a "# Title" line, a comment
// line, then one "## Section" per entry type in the order preference,
// rule, decision, architecture, procedure, fix, fact (other types after,
// by name; "Untyped" last), each holding entry blocks sorted by importance
// (high first), active before conflict, then id. Only active and conflict
// entries are rendered; superseded, forgotten and unknown statuses are not.
// When several entries share an id, one is kept (the least in a total
// order over all fields), so the output never depends on input order.
//
// # Entry block
//
// Part of the on-disk format; do not change.
//
//	<!-- mem:m-3f1a9c2b7d10 -->
//	### Use pnpm, not npm
//	*preference · importance 2 · tags: node, tooling · terms: pnpm · conflict: cg-1*
//	> The description, one "> " line per line (">" for a blank line).
//
//	Install dependencies with pnpm; never npm.
//
// Line by line:
//
//   - The anchor line holds the id, percent-encoded outside
//     [A-Za-z0-9._~:-] (engine ids pass unchanged). An entry with an empty
//     id has no anchor line.
//   - The heading is "### " and the one-line title ("###" when empty).
//   - The meta line is wrapped in single asterisks and always present. Its
//     items are separated by " · ": the type (omitted when empty), then
//     "importance N" (0–3), "tags: a, b", "terms: x, y" (omitted when
//     empty) and, for a conflict entry only, "conflict: <group>" (or
//     "conflict"). Tags and terms cannot contain "," or "·".
//   - The description quote follows the meta line directly; the content
//     follows after one blank line.
//   - Blocks are separated by one blank line; the file ends with one "\n".
//
// # Escaping
//
// Parse reads structure line by line: anchor lines, other one-line HTML
// comments, and headings of level 1–3 (after leading spaces or tabs). So
// that text inside a block can never start or end a block, the renderers
// escape every content or session-text line that, once its leading
// backslashes are removed, begins (after spaces or tabs) with "<!--" or a
// level 1–3 heading marker: they prefix one backslash ("\### x",
// "\<!-- mem:x -->"), which Markdown shows as the plain text. Parse removes
// one backslash from exactly such lines, so any text round-trips,
// including text that starts with backslashes already. Headings of level
// 4–6 inside content are left as they are: they are text to Parse. Lines
// inside a fenced code block are escaped too (the backslash then shows).
// Descriptions need no escaping: each of their lines starts with ">".
//
// # Canonical form and round trip
//
// Rendering first puts each entry in its canonical form (Canonical: valid
// UTF-8, one-line title, \n line ends, no trailing spaces, no blank lines
// at the ends, cleaned tags). For every entry x the global and knowledge
// files give back ParseEntry(block) == Canonical(x), field by field. The
// summary is a lossy view (texts are cut) and index.md has no blocks:
// neither is a source for sync.
//
// # Hand edits
//
// Compare parses the rendered and the edited file and compares blocks by
// their canonical fields: an anchored block whose fields changed is
// Revised, a "###" block without anchor is Added (so is a second block
// with an anchor already seen: a copied block), an anchor that is gone is
// Removed. Whitespace alone (blank lines, trailing spaces, \r\n, the end of
// the file) and the order of blocks change nothing. If more than half of
// the rendered file's anchored blocks are gone — the incident of a file
// cut to its first 16 lines — or an edited block cannot be read, the Diff
// is Damaged and must not be applied.
//
// # Session-start context
//
// StripTimestamps removes timestamp-only lines from the stable layer;
// Truncate cuts a text at a rune boundary and appends
// "[注：原文 X 字符已截断]". WriteFileAtomic writes every file: temporary
// file in the same directory, fsync, rename, fsync of the directory.
package markdown
