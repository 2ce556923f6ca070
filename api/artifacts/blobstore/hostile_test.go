package blobstore_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/artifacts/blobstore"
)

// A file:// store is read below its directory only: a planted link out of
// it is refused by name, never copied into a pull or a report.
func TestFileStoreRefusesLinksOut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		links  map[string]string // key -> target; OUTSIDE is the sibling directory
		want   string            // STORE and OUTSIDE stand for the directories
		copied string            // with no refusal: a key whose content must be copied
	}{
		{"a file to an absolute path", map[string]string{"ns/t/attempt-1/trials/x/0/grade.yaml": "OUTSIDE/secret"},
			"read file://STORE/ns/t/attempt-1/trials/x/0/grade.yaml: ns/t/attempt-1/trials/x/0/grade.yaml is a symbolic link to OUTSIDE/secret, an absolute path (links must be relative and stay inside STORE); refused", ""},
		{"a file climbing out", map[string]string{"ns/t/attempt-1/trials/x/0/grade.yaml": "../../../../../../../outside/secret"},
			"ns/t/attempt-1/trials/x/0/grade.yaml is a symbolic link to ../../../../../../../outside/secret, outside STORE; refused", ""},
		{"a directory", map[string]string{"ns/leak": "../../outside"},
			"read file://STORE/ns/leak: ns/leak is a symbolic link to ../../outside, outside STORE; refused", ""},
		{"a link inside the store is followed", map[string]string{"ns/t/attempt-1/trials/x/0/grade.yaml": "trajectory.yaml"},
			"", "ns/t/attempt-1/trials/x/0/grade.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			store, outside := filepath.Join(base, "store"), filepath.Join(base, "outside")
			real := filepath.Join(store, "ns", "t", "attempt-1", "trials", "x", "0", "trajectory.yaml")
			for p, content := range map[string]string{real: "outcome: Passed\n", filepath.Join(outside, "secret"): "SECRET\n"} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for key, target := range tc.links {
				if err := os.Symlink(strings.ReplaceAll(target, "OUTSIDE", outside), filepath.Join(store, filepath.FromSlash(key))); err != nil {
					t.Fatal(err)
				}
			}
			u, err := blobstore.FileURL(store)
			if err != nil {
				t.Fatal(err)
			}
			dst := t.TempDir()
			_, err = blobstore.Mirror(ctxT(t), u, dst)
			want := strings.NewReplacer("STORE", store, "OUTSIDE", outside).Replace(tc.want)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				got, _ := os.ReadFile(filepath.Join(dst, filepath.FromSlash(tc.copied)))
				if string(got) != "outcome: Passed\n" {
					t.Fatalf("%s: %q", tc.copied, got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v\nwant it to contain %q", err, want)
			}
			_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
					t.Errorf("%s holds the outside file", p)
				}
				return nil
			})
		})
	}
}

// A missing object is still IsNotFound through the confined read.
func TestFileStoreGetMissing(t *testing.T) {
	u, err := blobstore.FileURL(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := blobstore.Open(ctxT(t), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Get(ctxT(t), "nope/grade.yaml"); !blobstore.IsNotFound(err) {
		t.Fatalf("error %v, want not found", err)
	}
}
