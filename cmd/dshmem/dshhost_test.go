package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// buildDshmem builds this command into the test's temp dir and returns
// the binary: the host must be given a real dshmem, not the test binary.
// The go build cache makes every build after the first a link.
func buildDshmem(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dshmem")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %v\n%s", err, out)
	return bin
}

// execOut runs a program and returns its stdout and stderr together.
func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
