package imagebuild

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The context tag is 16 hex, the same for the same files wherever they
// are and whenever they were written, and changes with any file's content,
// name or mode, a symbolic link's target, and the Dockerfile's path.
func TestContextTag(t *testing.T) {
	files := map[string]string{"Dockerfile": "FROM debian:bookworm-slim\n", "app/main.py": "print(1)\n", "data.txt": "x\n"}
	a, b := writeTree(t, files), writeTree(t, files)
	if err := os.Chtimes(filepath.Join(b, "data.txt"), time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	tag := func(dir, df string) string {
		t.Helper()
		s, err := ContextTag(dir, filepath.Join(dir, df))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := tag(a, "Dockerfile")
	if len(base) != 16 || strings.Trim(base, "0123456789abcdef") != "" {
		t.Fatalf("tag %q is not 16 hex", base)
	}
	if got := tag(b, "Dockerfile"); got != base {
		t.Errorf("same files elsewhere (another mtime): %s, want %s", got, base)
	}
	changes := map[string]func(dir string) string{
		"a file's content": func(d string) string {
			os.WriteFile(filepath.Join(d, "data.txt"), []byte("y\n"), 0o644)
			return "Dockerfile"
		},
		"a new file": func(d string) string {
			os.WriteFile(filepath.Join(d, "app/new.py"), nil, 0o644)
			return "Dockerfile"
		},
		"a file's mode": func(d string) string {
			os.Chmod(filepath.Join(d, "app/main.py"), 0o755)
			return "Dockerfile"
		},
		"a renamed file": func(d string) string {
			os.Rename(filepath.Join(d, "data.txt"), filepath.Join(d, "data2.txt"))
			return "Dockerfile"
		},
		"a symbolic link": func(d string) string {
			os.Symlink("data.txt", filepath.Join(d, "link"))
			return "Dockerfile"
		},
		"the Dockerfile's path": func(d string) string {
			os.WriteFile(filepath.Join(d, "Dockerfile.alt"), []byte(files["Dockerfile"]), 0o644)
			os.Remove(filepath.Join(d, "Dockerfile"))
			os.WriteFile(filepath.Join(d, "Dockerfile"), []byte(files["Dockerfile"]), 0o644)
			return "Dockerfile.alt"
		},
	}
	seen := map[string]string{base: "the original"}
	for what, change := range changes {
		d := writeTree(t, files)
		got := tag(d, change(d))
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: tag %s, the same as %s", what, got, prev)
		}
		seen[got] = what
	}
	// A Dockerfile outside the context counts by its content.
	out := writeTree(t, map[string]string{"Dockerfile": "FROM scratch\n"})
	t1, err := ContextTag(a, filepath.Join(out, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "Dockerfile"), []byte("FROM scratch\nCOPY . /\n"), 0o644)
	if t2, _ := ContextTag(a, filepath.Join(out, "Dockerfile")); t2 == t1 {
		t.Errorf("a Dockerfile outside the context changed, the tag did not: %s", t1)
	}
}

// Lookup asks HEAD /v2/<prefix>tolokaforge-tasks/<name>/manifests/<tag>
// with the OCI and Docker manifest kinds accepted, and returns the digest
// the registry names; a missing tag is "", anything else an error naming
// the registry.
func TestLookup(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	var gotAccept, gotMethod string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAccept, gotMethod = r.Header.Get("Accept"), r.Method
		switch r.URL.Path {
		case "/v2/":
			w.WriteHeader(http.StatusOK)
		case "/v2/team/tolokaforge-tasks/hello/manifests/aaaa":
			w.Header().Set("Docker-Content-Digest", digest)
			w.WriteHeader(http.StatusOK)
		case "/v2/team/tolokaforge-tasks/broken/manifests/aaaa":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	b, err := New(Options{Registry: host + "/team", Insecure: true, LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	d, err := b.Lookup(t.Context(), "hello", "aaaa")
	if err != nil || d != digest {
		t.Fatalf("Lookup = %q, %v; want %s", d, err, digest)
	}
	if gotMethod != http.MethodHead {
		t.Errorf("method %s, want HEAD", gotMethod)
	}
	for _, mt := range []string{"application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.index.v1+json"} {
		if !strings.Contains(gotAccept, mt) {
			t.Errorf("Accept %q lacks %s", gotAccept, mt)
		}
	}
	if d, err := b.Lookup(t.Context(), "hello", "bbbb"); err != nil || d != "" {
		t.Errorf("missing tag: %q, %v; want none", d, err)
	}
	if _, err := b.Lookup(t.Context(), "broken", "aaaa"); err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), host) {
		t.Errorf("a registry error: %v, want it named with the status", err)
	}
	srv.Close()
	for name, err := range map[string]error{"Ping": b.Ping(t.Context()), "Lookup": func() error { _, err := b.Lookup(t.Context(), "hello", "aaaa"); return err }()} {
		if err == nil || !strings.Contains(err.Error(), "registry "+host+"/team unreachable") {
			t.Errorf("%s of a closed registry: %v, want it named unreachable", name, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, o := range []Options{
		{Registry: "", LogDir: "x"},
		{Registry: "http://r:5000", LogDir: "x"},
		{Registry: "r:5000", LogDir: "x", Builder: "docker"},
		{Registry: "r:5000"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) passed", o)
		}
	}
	b, err := New(Options{Registry: "r:5000", LogDir: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Build(t.Context(), Task{Name: "Not_A_Name"}); err == nil {
		t.Error("a task name that is no repository name was accepted")
	}
}
