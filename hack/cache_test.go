package hack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cacheRun sources cache.sh with its root at cache and runs script.
func cacheRun(t *testing.T, cache, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail; source cache.sh; "+script)
	cmd.Env = append(os.Environ(), "TOLOKAFORGE_CACHE="+cache)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCacheBuildsOnceAndLinks: the first call builds and links, the second
// (a clean clone: another destination) reuses and says so; another key
// builds again; a failed build leaves no entry and the next call retries.
func TestCacheBuildsOnceAndLinks(t *testing.T) {
	cache, work := t.TempDir(), t.TempDir()
	build := `builder() { echo built >> "` + work + `/count"; printf 'artifact %s' "$1" > "$TF_OUT"; }; `
	for i, step := range []struct {
		script, wantLog string
		wantErr         bool
	}{
		{build + `tf_cached k/a-1 "` + work + `/clone1/bin/a" builder one`, "cache: built k/a-1 in", false},
		{build + `tf_cached k/a-1 "` + work + `/clone2/bin/a" builder one`, "cache: reusing k/a-1", false},
		{build + `tf_cached k/a-2 "` + work + `/clone2/bin/a" builder two`, "cache: built k/a-2 in", false},
		{`tf_cached k/bad "` + work + `/clone1/bin/bad" false`, "cache: building k/bad failed", true},
		{build + `tf_cached k/bad "` + work + `/clone1/bin/bad" builder three`, "cache: built k/bad in", false},
	} {
		out, err := cacheRun(t, cache, step.script)
		if (err != nil) != step.wantErr || !strings.Contains(out, step.wantLog) {
			t.Fatalf("step %d: err %v, log %q; want error %v and %q", i, err, out, step.wantErr, step.wantLog)
		}
	}
	for _, c := range []struct{ link, want string }{
		{"clone1/bin/a", "artifact one"}, {"clone2/bin/a", "artifact two"}, {"clone1/bin/bad", "artifact three"},
	} {
		b, err := os.ReadFile(filepath.Join(work, c.link))
		if err != nil || string(b) != c.want {
			t.Errorf("%s: %q, %v; want %q", c.link, b, err, c.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(work, "count")); strings.Count(string(b), "built") != 3 {
		t.Errorf("builder ran %d times, want 3 (one per key that built)", strings.Count(string(b), "built"))
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "k", "*.tmp.*")); len(left) != 0 {
		t.Errorf("temporary entries left: %v", left)
	}
}

// TestCacheConcurrentWritersKeepOneWholeEntry: runs building one key at
// once (directories, the hard case for rename) end with one complete entry
// and every destination linked to it.
func TestCacheConcurrentWritersKeepOneWholeEntry(t *testing.T) {
	cache, work := t.TempDir(), t.TempDir()
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := fmt.Sprintf(`builder() { mkdir -p "$TF_OUT"; for f in 1 2 3 4 5 6 7 8; do sleep 0.02; echo "part $f" > "$TF_OUT/$f"; done; }
tf_cached k/dir "%s/clone%d/assets" builder`, work, i)
			if out, err := cacheRun(t, cache, script); err != nil {
				errs[i] = fmt.Errorf("%v: %s", err, out)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	for i := range n {
		for f := 1; f <= 8; f++ {
			b, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("clone%d/assets/%d", i, f)))
			if err != nil || string(b) != fmt.Sprintf("part %d\n", f) {
				t.Errorf("clone%d/assets/%d: %q, %v", i, f, b, err)
			}
		}
	}
	ents, _ := os.ReadDir(filepath.Join(cache, "k"))
	if len(ents) != 1 || ents[0].Name() != "dir" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("cache holds %v, want only the entry dir (no temporary leftovers)", names)
	}
	if inner, _ := os.ReadDir(filepath.Join(cache, "k", "dir")); len(inner) != 8 {
		t.Errorf("the entry holds %d names, want its 8 files (a loser's copy moved inside?)", len(inner))
	}
}

// TestCacheKeyNamesWhatBuiltIt: the key changes with the inputs and with
// the Go toolchain, and not otherwise.
func TestCacheKeyNamesWhatBuiltIt(t *testing.T) {
	cache := t.TempDir()
	key := func(goVersion, input string) string {
		t.Helper()
		out, err := cacheRun(t, cache, `tf_go_version=`+goVersion+`; tf_key - <<<"`+input+`"`)
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(out)
	}
	a := key("go1.26.8/amd64", "go.mod v1")
	if len(a) != 20 {
		t.Errorf("key %q, want 20 hex digits", a)
	}
	if key("go1.26.8/amd64", "go.mod v1") != a {
		t.Error("same inputs gave another key")
	}
	if key("go1.26.8/amd64", "go.mod v2") == a {
		t.Error("changed inputs kept the key")
	}
	if key("go1.27.3/amd64", "go.mod v1") == a {
		t.Error("another Go toolchain kept the key")
	}
}

// TestTreeKeyFollowsTheCheckout: the project's artifacts are keyed by what
// a build would read: an edit, a new file or a changed symlink changes the
// key, an ignored file does not; a symlinked directory is no error.
func TestTreeKeyFollowsTheCheckout(t *testing.T) {
	repo := t.TempDir()
	hackDir, _ := os.Getwd()
	sh := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", "set -euo pipefail; source '"+hackDir+"/cache.sh'; "+script)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", script, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	sh(`git init -q . && mkdir -p a && echo one > a/f.go && echo 'bin/' > .gitignore && ln -s a linkdir &&
git add -A && git -c user.email=t@t -c user.name=t commit -qm init`)
	base := sh("tf_tree_key")
	for _, step := range []struct {
		name, script string
		same         bool
	}{
		{"ignored file", "mkdir -p bin && echo x > bin/out", true},
		{"edited tracked file", "echo two > a/f.go", false},
		{"new untracked file", "echo new > a/g.go", false},
		{"symlink retargeted", "rm linkdir && ln -s bin linkdir", false},
	} {
		got := sh(step.script + " && tf_tree_key")
		if (got == base) != step.same {
			t.Errorf("%s: key %s, before %s; want same=%v", step.name, got, base, step.same)
		}
		base = got
	}
}

// TestGoBinaryBuildsOncePerInputs: tf_go_binary builds the package static
// and links it; the same inputs are reused, other flags build again.
func TestGoBinaryBuildsOncePerInputs(t *testing.T) {
	cache, mod := t.TempDir(), t.TempDir()
	for name, text := range map[string]string{
		"go.mod":      "module example.com/hello\n\ngo 1.22\n",
		"go.sum":      "",
		"cmd/main.go": "package main\n\nvar word = \"hello\"\n\nfunc main() { println(word) }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mod, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(mod, "bin", "hello")
	for i, step := range []struct{ flags, wantLog, wantOut string }{
		{"-s -w", "cache: built bin/hello-", "hello"},
		{"-s -w", "cache: reusing bin/hello-", "hello"},
		{"-X main.word=bye", "cache: built bin/hello-", "bye"},
	} {
		out, err := cacheRun(t, cache, `tf_go_binary bin hello "`+mod+`" cmd "`+step.flags+`" "`+dest+`"`)
		if err != nil || !strings.Contains(out, step.wantLog) {
			t.Fatalf("step %d: %v, log %q; want %q", i, err, out, step.wantLog)
		}
		got, err := exec.Command(dest).CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != step.wantOut {
			t.Errorf("step %d: the binary printed %q (%v), want %q", i, got, err, step.wantOut)
		}
	}
}
