package packfiles

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// MaxBundleBytes bounds a bundle. The files reach the runner inside one
// RegisterTrial message (64 MiB), base64-encoded; 32 MiB leaves room for
// the encoding and the rest of the task.
const MaxBundleBytes = 32 << 20

// DigestPattern is the one form of a bundle's digest, as the CRD checks it.
const DigestPattern = `^sha256:[0-9a-f]{64}$`

var digestRE = regexp.MustCompile(DigestPattern)

// ConfigMapKey is the binaryData key of a bundle kept in a ConfigMap.
const ConfigMapKey = "files.tar"

// StoreKey is where a bundle lives in an artifact store, by content:
// packs/sha256/<hex>.tar. Two packs with the same files share one object,
// and an object is never rewritten with other bytes.
func StoreKey(digest string) string {
	return "packs/sha256/" + strings.TrimPrefix(digest, "sha256:") + ".tar"
}

// Digest is the bundle's name: "sha256:" and the hex of its sha256.
func Digest(bundle []byte) string {
	sum := sha256.Sum256(bundle)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckDigest refuses a digest not of DigestPattern's form.
func CheckDigest(d string) error {
	if !digestRE.MatchString(d) {
		return fmt.Errorf("digest %q: want sha256: followed by 64 lowercase hex digits", d)
	}
	return nil
}

// CheckPath refuses a path a bundle may not hold: empty, absolute, not
// clean, or leaving the bundle. Paths are slash-separated, as in
// tool_artifacts.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("an empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is an absolute path; want one relative to the bundle", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the bundle", p)
	case strings.ContainsRune(p, '\\') || strings.ContainsRune(p, 0):
		return fmt.Errorf("%q holds a backslash or NUL; want a slash-separated path", p)
	case path.Clean(p) != p || p == ".":
		return fmt.Errorf("%q is not a clean path (want %q)", p, path.Clean(p))
	}
	return nil
}

// epoch is every entry's mtime: the bundle depends on the files only.
var epoch = time.Unix(0, 0).UTC()

// Build writes files (path -> content) as a bundle.
func Build(files map[string][]byte) ([]byte, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		if err := CheckPath(p); err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg, Name: p, Mode: 0o644, Size: int64(len(files[p])),
			ModTime: epoch, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", p, err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, fmt.Errorf("bundle: %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	if buf.Len() > MaxBundleBytes {
		return nil, fmt.Errorf("bundle: %d bytes exceeds the limit of %d bytes", buf.Len(), MaxBundleBytes)
	}
	return buf.Bytes(), nil
}

// Ref is what a Task records of its bundle.
type Ref struct {
	Digest string
	Size   int64
}

// CheckRef refuses a Ref no bundle can match (a digest of the wrong form,
// a size over the limit), so a reader can refuse it before fetching.
func CheckRef(ref Ref) error {
	if err := CheckDigest(ref.Digest); err != nil {
		return err
	}
	if ref.Size > MaxBundleBytes {
		return fmt.Errorf("size %d exceeds the limit of %d bytes", ref.Size, MaxBundleBytes)
	}
	return nil
}

// Open verifies bundle against ref (size, then digest) and reads its files.
// where names the bundle's source in every error (e.g. "configMap ns/name
// key files.tar").
func Open(bundle []byte, ref Ref, where string) (map[string][]byte, error) {
	if err := CheckRef(ref); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if int64(len(bundle)) > MaxBundleBytes {
		return nil, fmt.Errorf("%s: %d bytes exceeds the limit of %d bytes", where, len(bundle), MaxBundleBytes)
	}
	if int64(len(bundle)) != ref.Size {
		return nil, fmt.Errorf("%s: %d bytes, the Task says %d", where, len(bundle), ref.Size)
	}
	if got := Digest(bundle); got != ref.Digest {
		return nil, fmt.Errorf("%s: digest %s does not match the Task's %s", where, got, ref.Digest)
	}
	files, err := Read(bundle)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return files, nil
}

// Read parses a bundle, refusing any entry that is not a regular file at a
// clean relative path, and a path named twice. It does not check the
// digest (Open does): it is the parser a fuzz target can reach directly.
func Read(bundle []byte) (map[string][]byte, error) {
	if len(bundle) > MaxBundleBytes {
		return nil, fmt.Errorf("bundle: %d bytes exceeds the limit of %d bytes", len(bundle), MaxBundleBytes)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(bundle))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bundle: not a tar: %w", err)
		}
		if err := CheckPath(hdr.Name); err != nil {
			return nil, fmt.Errorf("bundle entry: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("bundle entry %q: not a regular file (tar type %q)", hdr.Name, hdr.Typeflag)
		}
		if _, dup := files[hdr.Name]; dup {
			return nil, fmt.Errorf("bundle entry %q: named twice", hdr.Name)
		}
		if hdr.Size < 0 || hdr.Size > int64(len(bundle)) {
			return nil, fmt.Errorf("bundle entry %q: size %d is larger than the bundle", hdr.Name, hdr.Size)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("bundle entry %q: %w", hdr.Name, err)
		}
		files[hdr.Name] = data
	}
}
