package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchServePace: --pace takes a duration from 0 to 1m; anything
// else is a usage error naming the flag and what it takes, before any
// server starts; --help teaches it.
func TestBenchServePace(t *testing.T) {
	for _, tc := range []struct {
		name string
		pace string
		want string
	}{
		{"Negative", "-1s", "--pace -1s: must be between 0 (no pause) and 1m"},
		{"TooLong", "2m", "--pace 2m0s: must be between 0 (no pause) and 1m"},
		{"NotADuration", "soon", "pace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := cli(t, "", "bench", "serve", "--seconds", "1", "--pace", tc.pace)
			require.EqualValues(t, 2, code, "exit %d, stdout %q, stderr %q; want exit 2", code, out, errs)
			assert.Empty(t, out, "a refused --pace ran the bench")
			assert.Contains(t, errs, tc.want)
		})
	}
	code, out, _ := cli(t, "", "bench", "serve", "--help")
	require.Zero(t, code)
	assert.Contains(t, out, "--pace D")
	assert.Contains(t, out, "as a host waits for its")
}
