package execagent_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "tolokaforge.io/operator/api/execagentpb"
)

// ent is one tar entry: a file (body), a directory (dir), a symbolic link
// (link) or a hard link (hard).
type ent struct {
	name, body, link, hard string
	dir                    bool
}

func mkTar(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case e.link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.link, 0
		case e.hard != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, e.hard, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tree lists the files under dir as "path=content", "path/" and "path->link".
func tree(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out = append(out, rel+"->"+l)
		case fi.IsDir():
			out = append(out, rel+"/")
		default:
			b, _ := os.ReadFile(p)
			out = append(out, rel+"="+string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestPutTarRefusesEscapes(t *testing.T) {
	a := startAgent(t, nil)
	for _, tc := range []struct {
		name string
		ents []ent
		msg  string
	}{
		{"dot-dot", []ent{{name: "../x", body: "x"}}, `"../x"`},
		{"dot-dot inside", []ent{{name: "a/../../x", body: "x"}}, `"a/../../x"`},
		{"absolute", []ent{{name: "/etc/x", body: "x"}}, `"/etc/x"`},
		{"escaping symlink", []ent{{name: "l", link: "../../etc"}}, "leaves the destination"},
		{"absolute symlink", []ent{{name: "l", link: "/etc"}}, "absolute path"},
		{"escaping hard link", []ent{{name: "h", hard: "../outside"}}, `"h"`},
		{"hard link to nothing", []ent{{name: "h", hard: "nothing"}}, "no regular file"},
		{"write through an archive symlink", []ent{{name: "l", link: "sub"}, {name: "sub", dir: true}, {name: "l/x", body: "x"}}, "is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := parent + "/dest"
			_, err := a.c.PutTar(context.Background(), &pb.PutTarRequest{DestDir: dest, Tar: mkTar(t, tc.ents...)})
			wantCode(t, err, codes.InvalidArgument, tc.msg)
			for _, p := range strings.Fields(tree(t, parent)) {
				if p != "dest/" && !strings.HasPrefix(p, "dest/") {
					t.Fatalf("%s landed outside the destination", p)
				}
			}
		})
	}
}

func TestPutTarReplaceAndGetTar(t *testing.T) {
	a := startAgent(t, nil)
	ctx := context.Background()
	dest := t.TempDir() + "/tests"
	archive := mkTar(t, ent{name: "sub", dir: true}, ent{name: "sub/a.txt", body: "A"}, ent{name: "b.sh", body: "B"},
		ent{name: "link", link: "sub/a.txt"}, ent{name: "hard", hard: "b.sh"})
	resp, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: dest, Tar: archive})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Entries != 5 || resp.Bytes != 2 {
		t.Fatalf("entries %d bytes %d, want 5 2", resp.Entries, resp.Bytes)
	}
	const want = "b.sh=B hard=B link->sub/a.txt sub/ sub/a.txt=A"
	if got := tree(t, dest); got != want {
		t.Fatalf("tree %s, want %s", got, want)
	}
	// Without replace, what was there stays; with replace it goes.
	must(t, os.WriteFile(dest+"/planted", []byte("p"), 0o644))
	if _, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: dest, Tar: mkTar(t, ent{name: "c", body: "C"})}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dest); !strings.Contains(got, "planted=p") || !strings.Contains(got, "c=C") {
		t.Fatalf("without replace: %s", got)
	}
	if _, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: dest, Tar: archive, Replace: true}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dest); got != want {
		t.Fatalf("after replace: %s, want %s", got, want)
	}

	// GetTar of the directory round-trips into another one.
	got, err := a.c.GetTar(ctx, &pb.GetTarRequest{Path: dest})
	if err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir() + "/copy"
	if _, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: copyDir, Tar: got.Tar}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, copyDir); got != want {
		t.Fatalf("round trip: %s, want %s", got, want)
	}
	// A file is one entry named by its base name.
	one, err := a.c.GetTar(ctx, &pb.GetTarRequest{Path: dest + "/sub/a.txt"})
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(one.Tar))
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(tr)
	if h.Name != "a.txt" || string(body) != "A" {
		t.Fatalf("entry %q %q, want a.txt A", h.Name, body)
	}
	_, err = a.c.GetTar(ctx, &pb.GetTarRequest{Path: dest, MaxBytes: 100})
	wantCode(t, err, codes.FailedPrecondition, "larger than 100 bytes")
	_, err = a.c.GetTar(ctx, &pb.GetTarRequest{Path: dest + "/link"})
	wantCode(t, err, codes.FailedPrecondition, dest+"/link")
}

// An agent that made the verifier's directory (or a component of its path)
// a symbolic link must not redirect the upload: without replace the call is
// refused naming the link; with replace, and with ResetDir, the link itself
// is replaced by a real directory and its target is untouched.
func TestSymlinkedDestination(t *testing.T) {
	a := startAgent(t, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		replace bool
		reset   bool
	}{
		{"refused without replace", false, false},
		{"replaced with replace", true, false},
		{"replaced by ResetDir", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			target := root + "/tmp"
			must(t, os.Mkdir(target, 0o755))
			must(t, os.WriteFile(target+"/keep", []byte("k"), 0o644))
			must(t, os.Symlink(target, root+"/logs"))
			dest := root + "/logs/verifier"
			if tc.reset {
				if _, err := a.c.ResetDir(ctx, &pb.ResetDirRequest{Path: dest}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: dest, Tar: mkTar(t, ent{name: "reward.txt", body: "1"}), Replace: tc.replace})
			if !tc.replace && !tc.reset {
				wantCode(t, err, codes.FailedPrecondition, root+"/logs is a symbolic link")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Lstat(root + "/logs"); err != nil || !fi.IsDir() {
				t.Fatalf("%s/logs is not a real directory: %v %v", root, fi.Mode(), err)
			}
			if got := tree(t, target); got != "keep=k" {
				t.Fatalf("the link's target changed: %s", got)
			}
		})
	}
	// A component that is a file is refused, or replaced.
	root := t.TempDir()
	must(t, os.WriteFile(root+"/f", []byte("x"), 0o644))
	_, err := a.c.PutTar(ctx, &pb.PutTarRequest{DestDir: root + "/f/sub", Tar: mkTar(t)})
	wantCode(t, err, codes.FailedPrecondition, root+"/f is not a directory")
	if _, err := a.c.ResetDir(ctx, &pb.ResetDirRequest{Path: root + "/f/sub"}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, root); got != "f/ f/sub/" {
		t.Fatalf("after ResetDir: %s", got)
	}
	_, err = a.c.ResetDir(ctx, &pb.ResetDirRequest{Path: "/"})
	wantCode(t, err, codes.InvalidArgument, "refusing to empty /")
	_, err = a.c.ResetDir(ctx, &pb.ResetDirRequest{Path: filepath.Dir(a.state)})
	wantCode(t, err, codes.InvalidArgument, "state directory")
}
