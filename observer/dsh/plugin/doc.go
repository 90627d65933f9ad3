// Package plugin installs dshmem's plugin for the DSH host into a DSH home
// and removes it again: the plugin file itself, embedded in the binary, and
// one row in the home's cordis.patch.yml that tells the host to load it.
//
// # What is written
//
//	<dsh-home>/dshmem/plugin.mjs     the embedded plugin (dir 0700, file 0600)
//	<dsh-home>/cordis.patch.yml      one row, below a marker comment:
//
//	# dshmem: long-term memory for DSH (written by `dshmem dsh install`; …)
//	- insert:
//	    - id: dshmem
//	      name: /abs/dsh-home/dshmem/plugin.mjs
//	      config:
//	        binary: /abs/path/to/dshmem
//	        root: /abs/memory/root
//	        dshHome: /abs/dsh-home
//
// The host reads cordis.patch.yml on every boot of every profile (and
// reloads it while `dsh web` runs): a top-level YAML sequence of patch
// rows, where a row `{insert: [entry…]}` adds entries to the plugin tree
// and a row `{id: X, key: value}` patches the entry X (`disabled: true`
// switches it off). The host refuses to boot when an inserted file is
// missing, when the file is not a sequence (an empty or comment-only file
// included), or when an id is inserted twice.
//
// # How the file is edited
//
// The file belongs to the user. It is parsed with a real YAML parser
// (go.yaml.in/yaml/v3), but the parse tree is used only to validate the
// file and to find the lines of our row; the edit itself is done on the
// text, so every other byte — other rows, comments, blank lines, flow or
// block style — is kept exactly. After every edit the new text is parsed
// again and compared, row by row, with what the edit meant to produce;
// an edit that would change anything else is refused rather than written.
//
// A file whose rows are one flow sequence ("[ {…}, {…} ]") gets our row
// as one more flow mapping, without the marker comment (flow.go).
//
// Our row is a top-level row whose insert list holds exactly one entry,
// with id dshmem. A row `{id: dshmem, …}` without insert is the user's
// patch of our entry (typically `disabled: true`): it is kept and
// reported. Any other place that names id dshmem is refused, naming the
// line, because the host would see a duplicate id.
//
// A file that does not parse, is not a sequence of mappings, holds more
// than one document or repeats a mapping key (the host's parser refuses
// those) is refused with its line, and left untouched. Before any change
// the previous file is copied to cordis.patch.yml.dshmem-bak. Writes are
// atomic (temp file in the same directory, fsync, rename, fsync of the
// directory) and keep the file's mode.
//
// Uninstall never leaves a file the host refuses: when our row was the
// last one, a file with nothing else left is removed, and one that still
// holds comments gets an empty sequence `[]`.
package plugin
