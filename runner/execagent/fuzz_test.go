package execagent

import (
	"archive/tar"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTarEntries extracts a two-entry archive whose names, link target and
// first entry type are fuzzed, and checks that nothing lands outside the
// destination and that every symbolic link left inside it points inside it.
// Seeds, and what the fuzzer found, live in testdata/fuzz/FuzzTarEntries and
// run as regression cases in every `go test`.
func FuzzTarEntries(f *testing.F) {
	for _, s := range []struct {
		name, link string
		typ        byte
		second     string
	}{
		{"../x", "", 0, "y"},
		{"/abs", "", 0, "y"},
		{"l", "../..", 2, "l/x"},
		{"l", ".", 2, "l/../../x"},
		{"l", "sub", 2, "l/x"},
		{"h", "../outside", 3, "y"},
		{"a/b", "", 1, "a/b/c"},
		{"./a", "", 0, "a/./b"},
		{"l", "a/../..", 2, "y"},
	} {
		f.Add(s.name, s.link, s.typ, s.second)
	}
	f.Fuzz(func(t *testing.T, name, link string, typ byte, second string) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		h := &tar.Header{Name: name, Mode: 0o644, Size: 1}
		switch typ % 4 {
		case 0:
			h.Typeflag = tar.TypeReg
		case 1:
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case 2:
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, link
		case 3:
			h.Typeflag, h.Size, h.Linkname = tar.TypeLink, 0, link
		}
		if tw.WriteHeader(h) != nil {
			return // not representable in a tar
		}
		if h.Size == 1 {
			if _, err := tw.Write([]byte("x")); err != nil {
				return
			}
		}
		if tw.WriteHeader(&tar.Header{Name: second, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg}) != nil {
			return
		}
		if _, err := tw.Write([]byte("y")); err != nil {
			return
		}
		if tw.Close() != nil {
			return
		}
		_, _, _ = extract(dest, bytes.NewReader(buf.Bytes()), 1<<20, nil)

		ents, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "dest" {
				t.Fatalf("%s landed outside the destination", filepath.Join(parent, e.Name()))
			}
		}
		if fi, err := os.Lstat(dest); err != nil || !fi.IsDir() {
			t.Fatalf("the destination is no longer a directory: %v", err)
		}
		err = filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type()&os.ModeSymlink == 0 {
				return nil
			}
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dest, p)
			j := path.Join(path.Dir(filepath.ToSlash(rel)), target)
			if strings.HasPrefix(target, "/") || j == ".." || strings.HasPrefix(j, "../") {
				t.Fatalf("link %s -> %s points outside the destination", rel, target)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestEntryName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"a/b", "a/b", true},
		{"./a/b/", "a/b", true},
		{"a//b", "a/b", true},
		{".", ".", true},
		{"", "", false},
		{"../x", "", false},
		{"a/../b", "", false},
		{"/etc/passwd", "", false},
		{"a\x00b", "", false},
	} {
		got, err := entryName(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("entryName(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
