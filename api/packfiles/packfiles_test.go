package packfiles_test

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/packfiles"
)

func mustBuild(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	b, err := packfiles.Build(files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawTar writes entries as given, so the reader's refusals can be reached
// with what Build would never write.
func rawTar(t testing.TB, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		h := h
		body := []byte(strings.Repeat("x", int(h.Size)))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBuildIsDeterministicAndRoundTrips(t *testing.T) {
	files := map[string][]byte{
		"tau_tools/b.py": []byte("print('b')\n"),
		"a.py":           []byte("import b\n"),
		"deep/" + strings.Repeat("d", 120) + "/x.py": []byte("long path"),
		"empty.txt": {},
	}
	a := mustBuild(t, files)
	// Another map with the same content (iteration order differs run to run).
	again := map[string][]byte{}
	for k, v := range files {
		again[k] = append([]byte(nil), v...)
	}
	b := mustBuild(t, again)
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same files differ")
	}
	if got, want := packfiles.Digest(a), packfiles.Digest(b); got != want {
		t.Fatalf("digests differ: %s vs %s", got, want)
	}
	got, err := packfiles.Read(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("read %d files, want %d", len(got), len(files))
	}
	for k, v := range files {
		if !bytes.Equal(got[k], v) {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	// Sorted paths, fixed mode and mtime, no owner names.
	tr := tar.NewReader(bytes.NewReader(a))
	var order []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		order = append(order, h.Name)
		if h.Mode != 0o644 || h.ModTime.Unix() != 0 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mode %o mtime %v owner %d:%d %q:%q; want 0644, epoch, 0:0 unnamed", h.Name, h.Mode, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
	}
	want := []string{"a.py", "deep/" + strings.Repeat("d", 120) + "/x.py", "empty.txt", "tau_tools/b.py"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("entry order %v, want %v", order, want)
	}
	// A change of one byte changes the digest.
	files["a.py"] = []byte("import c\n")
	if packfiles.Digest(mustBuild(t, files)) == packfiles.Digest(a) {
		t.Error("a changed file kept the digest")
	}
}

func TestDigestForm(t *testing.T) {
	d := packfiles.Digest([]byte("abc"))
	if d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Digest(abc) = %s", d)
	}
	for _, tc := range []struct {
		in, err string
	}{
		{d, ""},
		{"sha256:" + strings.Repeat("A", 64), `want sha256: followed by 64 lowercase hex digits`},
		{"sha512:" + strings.Repeat("a", 64), `want sha256:`},
		{"sha256:" + strings.Repeat("a", 63), `want sha256:`},
		{strings.Repeat("a", 64), `want sha256:`},
	} {
		err := packfiles.CheckDigest(tc.in)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%s: got %v, want an error naming it and %q", tc.in, err, tc.err)
		}
	}
}

func TestBuildRefusesBadPaths(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/etc/passwd", `"/etc/passwd" is an absolute path`},
		{"../x.py", `"../x.py" leaves the bundle`},
		{"..", `".." leaves the bundle`},
		{"a/../../x.py", `is not a clean path`},
		{"a//b.py", `"a//b.py" is not a clean path (want "a/b.py")`},
		{"./a.py", `is not a clean path`},
		{"", "an empty path"},
		{`a\b.py`, "backslash"},
	} {
		_, err := packfiles.Build(map[string][]byte{tc.path: []byte("x")})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%q): got %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestReadRefuses(t *testing.T) {
	reg := func(name string) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: 1}
	}
	for _, tc := range []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"escape", rawTar(t, reg("../evil.py")), `bundle entry: "../evil.py" leaves the bundle`},
		{"nested escape", rawTar(t, reg("a/../../evil.py")), `"a/../../evil.py" is not a clean path`},
		{"absolute", rawTar(t, reg("/abs.py")), `bundle entry: "/abs.py" is an absolute path`},
		{"duplicate", rawTar(t, reg("a.py"), reg("a.py")), `bundle entry "a.py": named twice`},
		{"symlink", rawTar(t, tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc/passwd"}), `bundle entry "l": not a regular file`},
		{"directory", rawTar(t, tar.Header{Typeflag: tar.TypeDir, Name: "d", Mode: 0o755}), `bundle entry "d": not a regular file`},
		{"not a tar", []byte(strings.Repeat("z", 1024)), "bundle: not a tar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := packfiles.Read(tc.bundle)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestOpenVerifies(t *testing.T) {
	b := mustBuild(t, map[string][]byte{"a.py": []byte("x = 1\n")})
	good := packfiles.Ref{Digest: packfiles.Digest(b), Size: int64(len(b))}
	other := "sha256:" + strings.Repeat("0", 64)
	const where = "configMap ns/cm key files.tar"
	for _, tc := range []struct {
		name   string
		bundle []byte
		ref    packfiles.Ref
		want   string
	}{
		{"good", b, good, ""},
		{"digest mismatch", b, packfiles.Ref{Digest: other, Size: good.Size},
			where + ": digest " + good.Digest + " does not match the Task's " + other},
		{"size mismatch", b, packfiles.Ref{Digest: good.Digest, Size: good.Size + 1},
			where + ": " + itoa(len(b)) + " bytes, the Task says " + itoa(len(b)+1)},
		{"malformed digest", b, packfiles.Ref{Digest: "sha256:xyz", Size: good.Size}, `digest "sha256:xyz": want sha256:`},
		{"over the limit", b, packfiles.Ref{Digest: good.Digest, Size: packfiles.MaxBundleBytes + 1},
			"exceeds the limit of 33554432 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := packfiles.Open(tc.bundle, tc.ref, where)
			if tc.want == "" {
				if err != nil || string(files["a.py"]) != "x = 1\n" {
					t.Fatalf("got %v, %v", files, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), where) {
				t.Fatalf("got %v, want %q prefixed by %q", err, tc.want, where)
			}
		})
	}
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// FuzzRead: whatever the bytes, Read never panics, and what it accepts
// holds only clean relative paths and builds back to a bundle it reads the
// same.
func FuzzRead(f *testing.F) {
	f.Add(mustBuild(f, map[string][]byte{"a.py": []byte("x"), "t/b.py": []byte("yy")}))
	f.Add(mustBuild(f, map[string][]byte{}))
	f.Add(rawTar(f, tar.Header{Typeflag: tar.TypeReg, Name: "../e", Size: 1}))
	f.Add(rawTar(f, tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/"}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := packfiles.Read(b)
		if err != nil {
			return
		}
		for p := range files {
			if err := packfiles.CheckPath(p); err != nil {
				t.Fatalf("accepted %q: %v", p, err)
			}
		}
		again, err := packfiles.Build(files)
		if err != nil {
			t.Fatalf("accepted files do not build: %v", err)
		}
		back, err := packfiles.Read(again)
		if err != nil || len(back) != len(files) {
			t.Fatalf("rebuilt bundle reads %d files, %v; want %d", len(back), err, len(files))
		}
		for p, v := range files {
			if !bytes.Equal(back[p], v) {
				t.Fatalf("%s changed across a rebuild", p)
			}
		}
	})
}

func TestStoreKey(t *testing.T) {
	d := packfiles.Digest([]byte("x"))
	want := "packs/sha256/" + d[len("sha256:"):] + ".tar"
	if got := packfiles.StoreKey(d); got != want {
		t.Fatalf("StoreKey(%s) = %q, want %q", d, got, want)
	}
}
