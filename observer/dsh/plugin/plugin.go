package plugin

import (
	_ "embed"
	"regexp"
)

// source is the plugin the host loads. The lead owns plugin.mjs; this
// package depends only on its `export const version = '…';` line.
//
//go:embed plugin.mjs
var source []byte

// Names inside the DSH home. Part of what users and the plugin see; do
// not change.
const (
	ID         = "dshmem"           // the plugin's entry id in the host's plugin tree
	PatchName  = "cordis.patch.yml" // the home-level patch layer, read by every profile
	BackupName = PatchName + ".dshmem-bak"
	DirName    = "dshmem"     // <dsh-home>/dshmem/ holds the files we write
	FileName   = "plugin.mjs" // <dsh-home>/dshmem/plugin.mjs
)

// Source returns the embedded plugin file.
func Source() []byte { return append([]byte(nil), source...) }

// Version returns the version of the embedded plugin, from its
// `export const version = '…';` line.
func Version() string { return embeddedVersion }

var embeddedVersion = VersionOf(source)

var versionLine = regexp.MustCompile(`(?m)^export\s+const\s+version\s*=\s*(?:'([^'\n]*)'|"([^"\n]*)")`)

// VersionOf returns the version a plugin file declares, or "" when it
// declares none (a file that is not ours, or a very old one).
func VersionOf(src []byte) string {
	m := versionLine.FindSubmatch(src)
	if m == nil {
		return ""
	}
	if len(m[1]) > 0 {
		return string(m[1])
	}
	return string(m[2])
}
