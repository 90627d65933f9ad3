package main

import (
	"encoding/json"
	"os"
	"strings"
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

// TestBenchServeEncoders: --encoders N gives the bench's server the
// sentence encoder, which fills vectors while the sessions run and says
// so; out of range or without the model it is refused. Mutations
// caught: the options' Model never started (no vectors line), the fill's
// status not taken at the end.
func TestBenchServeEncoders(t *testing.T) {
	code, out, errs := cli(t, "", "bench", "serve", "--seconds", "1", "--encoders", "65")
	require.EqualValues(t, 2, code, "exit %d, %q %q", code, out, errs)
	assert.Contains(t, errs, "--encoders 65 is out of range")
	t.Run("NoModel", func(t *testing.T) {
		t.Setenv("DSHMEM_MODELS", t.TempDir())
		code, _, errs := cli(t, "", "bench", "serve", "--seconds", "1", "--encoders", "1")
		assert.False(t, code == 0 || !strings.Contains(errs, "dshmem model install"), "exit %d, %q: want an error saying to install the model", code, errs)
	})
	_, src, _ := cli(t, "", "model", "status", "--json")
	if !strings.Contains(src, `"installed":true`) {
		require.NotEqualValues(t, "true", os.Getenv("CI"), "the model is needed in CI; status --json: %s", src)
		t.Skipf("model not installed (`dshmem model install`); status --json: %s", src)
	}
	code, out, errs = cli(t, "", "bench", "serve", "--sessions", "2", "--seconds", "2", "--encoders", "1", "--json")
	require.EqualValues(t, 0, code, "%s %s", out, errs)
	var res struct {
		Vectors *struct {
			Encoders, Encoded int
		} `json:"vectors"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), "%s", out)
	require.NotNil(t, res.Vectors, "no vectors in %s", out)
	assert.Equal(t, 1, res.Vectors.Encoders)
	assert.Positive(t, res.Vectors.Encoded, "nothing encoded in a 2 s run: %s", out)
}
