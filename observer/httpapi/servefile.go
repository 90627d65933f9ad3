package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"dshmem/markdown"
)

// ServeFile is the name, inside a root, of the file a running server
// writes so that clients on the same machine can find it (ARCHITECTURE
// §2). Part of the on-disk layout; do not change.
const ServeFile = "serve.json"

// ServeInfo is the content of serve.json:
//
//	{"addr":"127.0.0.1:PORT","pid":N,"token":"…"}
//
// The file is mode 0600: the token is the only thing that stands between
// another local user and the memory.
type ServeInfo struct {
	Addr  string `json:"addr"`
	PID   int    `json:"pid"`
	Token string `json:"token"`
}

// NewToken returns a fresh bearer token: 32 random bytes, hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make server token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// WriteServeFile writes root/serve.json atomically (temp file with mode
// 0600, fsync, rename, fsync of the directory), so a reader never sees
// half a token.
func WriteServeFile(root string, info ServeInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("encode %s: %w", ServeFile, err)
	}
	return markdown.WriteFileAtomic(filepath.Join(root, ServeFile), append(b, '\n'), 0o600)
}

// ReadServeFile reads root/serve.json. A missing file is an error that
// wraps fs.ErrNotExist.
func ReadServeFile(root string) (ServeInfo, error) {
	var info ServeInfo
	b, err := os.ReadFile(filepath.Join(root, ServeFile))
	if err != nil {
		return info, fmt.Errorf("read %s: %w", ServeFile, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("read %s: %w", ServeFile, err)
	}
	if info.Addr == "" || info.Token == "" {
		return info, fmt.Errorf("read %s: no addr or token", ServeFile)
	}
	return info, nil
}

// RemoveServeFile removes root/serve.json if it still names pid, so a
// server that exits never removes the file of a newer one.
func RemoveServeFile(root string, pid int) error {
	path := filepath.Join(root, ServeFile)
	if info, err := ReadServeFile(root); err == nil && info.PID != pid {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
