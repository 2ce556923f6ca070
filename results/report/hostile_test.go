package report

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report never reads through a link out of its artifacts directory: the
// link is refused by name (a planted grade.yaml -> /etc/passwd, or a
// symlinked attempts directory, would otherwise be read into the report).
func TestFromArtifactsRefusesLinksOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		link  string // path below the root
		to    string // OUTSIDE stands for a sibling directory with real artifacts
		want  string // ROOT and OUTSIDE stand for the directories
		site  bool   // refused only when the trial pages are written
		reads bool   // a link inside the root: read
	}{
		{name: "grade.yaml", link: "trials/t1/0/grade.yaml", to: "OUTSIDE/trials/t1/0/grade.yaml",
			want: "artifacts ROOT: trials/t1/0/grade.yaml is a symbolic link to OUTSIDE/trials/t1/0/grade.yaml, an absolute path (links must be relative and stay inside ROOT); refused"},
		{name: "metrics.yaml climbing out", link: "trials/t1/0/metrics.yaml", to: "../../../../outside/trials/t1/0/metrics.yaml",
			want: "artifacts ROOT: trials/t1/0/metrics.yaml is a symbolic link to ../../../../outside/trials/t1/0/metrics.yaml, outside ROOT; refused"},
		{name: "attempts directory", link: "trials/t1/0/attempts", to: "../../../../outside/trials/t1/0/attempts",
			want: "artifacts ROOT: trials/t1/0/attempts is a symbolic link to ../../../../outside/trials/t1/0/attempts, outside ROOT; refused"},
		{name: "a directory of trials", link: "other", to: "../outside",
			want: "other is a symbolic link to ../outside, outside ROOT; refused"},
		{name: "a link inside is read", link: "trials/t1/0/grade.yaml", to: "../../../copy/grade.yaml", reads: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			writeAttempt(t, attempt{root: root, task: "t1", index: 0, n: 1, outcome: "Graded", pass: false, score: 0.25, turns: 2})
			writeAttempt(t, attempt{root: outside, task: "t1", index: 0, n: 1, outcome: "Graded", pass: true, score: 1, turns: 2, costUSD: 99})
			link := filepath.Join(root, filepath.FromSlash(tc.link))
			if tc.reads {
				// The grade kept elsewhere inside the root: a passing one.
				if err := os.MkdirAll(filepath.Join(root, "copy"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(filepath.Join(outside, "trials", "t1", "0", "grade.yaml"), filepath.Join(root, "copy", "grade.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(strings.ReplaceAll(tc.to, "OUTSIDE", outside), link); err != nil {
				t.Fatal(err)
			}
			rep, err := FromArtifacts(root)
			if tc.reads {
				if err != nil {
					t.Fatal(err)
				}
				if got := rep.Trials[0]; got.Phase != "Passed" || *got.Score != 1 {
					t.Fatalf("the linked grade was not read: %+v", got)
				}
				return
			}
			want := strings.NewReplacer("ROOT", root, "OUTSIDE", outside).Replace(tc.want)
			if err == nil {
				t.Fatalf("read: %+v; want %q", rep.Trials, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v\nwant it to contain %q", err, want)
			}
		})
	}
}

// Trial pages read through the same confinement.
func TestTrialPageRefusesLinksOut(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	writeAttempt(t, attempt{root: root, task: "t1", index: 0, n: 1, outcome: "Graded", pass: true, score: 1, turns: 2})
	rep, err := FromArtifacts(root)
	if err != nil {
		t.Fatal(err)
	}
	// Planted after the report was read, before its pages are written.
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	traj := filepath.Join(root, "trials", "t1", "0", "trajectory.yaml")
	if err := os.Remove(traj); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../outside/secret", traj); err != nil {
		t.Fatal(err)
	}
	err = rep.WriteSite(filepath.Join(t.TempDir(), "report.html"))
	want := "trials/t1/0/trajectory.yaml is a symbolic link to ../../../../outside/secret, outside " + root + "; refused"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant it to contain %q", err, want)
	}
}

// Every href the report writes to a file below its folder is relative and
// resolves to that file, whatever the folder's name.
func TestHrefShapes(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct {
		dir  string // a folder below the report's
		want string
	}{
		{"javascript:alert(1)", "./javascript:alert%281%29/trials/t/0/grade.yaml"},
		{"a:b", "./a:b/trials/t/0/grade.yaml"},
		{"x/a:b", "x/a:b/trials/t/0/grade.yaml"},
		{"#frag", "%23frag/trials/t/0/grade.yaml"},
		{"q?x=1", "q%3Fx=1/trials/t/0/grade.yaml"},
		{"100%", "100%25/trials/t/0/grade.yaml"},
		{"with space", "with%20space/trials/t/0/grade.yaml"},
		{`back\slash`, "back%5Cslash/trials/t/0/grade.yaml"},
		{"..x", "..x/trials/t/0/grade.yaml"},
		{"plain", "plain/trials/t/0/grade.yaml"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			rel := tc.dir + "/trials/t/0/grade.yaml"
			got := string(href(base, filepath.Join(base, filepath.FromSlash(rel))))
			if got != tc.want {
				t.Fatalf("href %q, want %q", got, tc.want)
			}
			checkRelative(t, got, rel)
		})
	}
	// Not below the report's folder: an absolute file:// URL, never a
	// relative one that climbs.
	outside := filepath.Join(filepath.Dir(base), "elsewhere", "grade.yaml")
	if got := string(href(base, outside)); got != (&url.URL{Scheme: "file", Path: filepath.ToSlash(outside)}).String() {
		t.Fatalf("href of a file outside: %q", got)
	}
	for _, bad := range []string{"/etc/passwd", "//evil.example/x", "../x", "a/../../x", "a//b", "", "./a", "a/."} {
		if h, ok := relHref(bad); ok {
			t.Errorf("relHref(%q) = %q; a path not below the folder has no relative link", bad, h)
		}
	}
}

// checkRelative: h parses as a relative URL (no scheme, no host, no
// leading slash) whose path, resolved against the folder, is rel.
func checkRelative(t *testing.T, h, rel string) {
	t.Helper()
	u, err := url.Parse(h)
	if err != nil {
		t.Fatalf("%q does not parse: %v", h, err)
	}
	if u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasPrefix(h, "/") {
		t.Fatalf("%q is not a relative path reference: %#v", h, u)
	}
	folder, _ := url.Parse("file:///report/")
	if got := folder.ResolveReference(u).Path; got != "/report/"+rel {
		t.Fatalf("%q resolves to %q, want %q", h, got, "/report/"+rel)
	}
}

// The page itself: a trial under a folder named javascript:alert(1) is
// linked as ./javascript:..., never as a javascript: URL.
func TestHTMLLinksUnderHostileFolderNames(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "javascript:alert(1)")
	writeAttempt(t, attempt{root: root, task: "t1", index: 0, n: 1, outcome: "Graded", pass: false, score: 0, turns: 2})
	rep, err := FromArtifacts(dir)
	if err != nil {
		t.Fatal(err)
	}
	htmlPath := filepath.Join(dir, "a:report.html")
	if err := rep.WriteSite(htmlPath); err != nil {
		t.Fatal(err)
	}
	trialPages, _ := filepath.Glob(filepath.Join(trialPagesDir(htmlPath), "*.html"))
	pages := append([]string{htmlPath}, trialPages...)
	if len(pages) != 2 {
		t.Fatalf("pages %v", pages)
	}
	hrefs := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		d := parseDOM(t, b)
		for _, a := range d.find("a", "") {
			h := attr(a, "href")
			hrefs++
			u, err := url.Parse(h)
			if err != nil || u.Scheme != "" {
				t.Errorf("%s: href %q has a scheme (%v)", filepath.Base(p), h, err)
			}
		}
		if bytes.Contains(b, []byte(`href="javascript:`)) || bytes.Contains(b, []byte(`href="a:`)) {
			t.Errorf("%s links a scheme:\n%s", p, b)
		}
	}
	if hrefs < 4 {
		t.Fatalf("only %d links checked", hrefs)
	}
}
