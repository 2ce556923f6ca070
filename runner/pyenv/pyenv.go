package pyenv

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Debian is the interpreter `make python-deps` provisions.
const Debian = "/usr/bin/python3"

// Provisioned are the modules `make python-deps` installs into Debian's python3
// that a pack's tools import (food_delivery_2's pydantic models validate emails).
var Provisioned = []string{"pydantic", "email_validator"}

// probeTimeout bounds one interpreter probe.
const probeTimeout = 10 * time.Second

// Choose returns the interpreter for a pack's Python: explicit when set, else env
// (the value of $TOLOKAFORGE_PYTHON), else the first of python3 on PATH and Debian's
// that imports every module of want, else python3 on PATH (Check then names what it
// lacks).
func Choose(ctx context.Context, explicit, env string, want []string) string {
	if explicit != "" {
		return explicit
	}
	if env != "" {
		return env
	}
	for _, c := range []string{"python3", Debian} {
		if _, err := exec.LookPath(c); err != nil {
			continue
		}
		if miss, err := Missing(ctx, c, want); err == nil && len(miss) == 0 {
			return c
		}
	}
	return "python3"
}

// Missing returns the modules of mods python cannot import (importlib's find_spec
// finds no spec), in the order given.
func Missing(ctx context.Context, python string, mods []string) ([]string, error) {
	if len(mods) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	const probe = "import importlib.util, sys\n" +
		"for m in sys.argv[1:]:\n" +
		"    try:\n" +
		"        ok = importlib.util.find_spec(m) is not None\n" +
		"    except Exception:\n" +
		"        ok = False\n" +
		"    if not ok:\n" +
		"        print(m)\n"
	cmd := exec.CommandContext(ctx, python, append([]string{"-I", "-c", probe}, mods...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w%s", python, err, tail(stderr.String()))
	}
	var miss []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			miss = append(miss, l)
		}
	}
	return miss, nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}

var importLine = regexp.MustCompile(`(?m)^[ \t]*(?:from[ \t]+([A-Za-z_][A-Za-z0-9_]*)[\w.]*[ \t]+import\b|import[ \t]+([^\n#;]+))`)

// Imports lists, sorted, the top-level modules the .py files among files (slash
// paths) import that the files do not provide themselves (a module or package of
// theirs, at any folder depth) and the runner does not provide (the tolokaforge
// package of its custom-check shim). The standard library's are listed too: an
// interpreter finds those. Relative imports are the pack's own.
func Imports(files map[string][]byte) []string {
	// The runner puts its custom-check shim (runner/grading/pychecks) on the
	// checks' path: a pack's checks.py imports tolokaforge.core.grading from it.
	own := map[string]bool{"tolokaforge": true}
	for p := range files {
		for _, part := range strings.Split(strings.TrimSuffix(p, ".py"), "/") {
			own[part] = true
		}
	}
	seen := map[string]bool{}
	for p, src := range files {
		if path.Ext(p) != ".py" {
			continue
		}
		for _, m := range importLine.FindAllSubmatch(src, -1) {
			var names []string
			if len(m[1]) > 0 {
				names = []string{string(m[1])}
			} else {
				for _, part := range strings.Split(string(m[2]), ",") {
					f := strings.Fields(strings.TrimSpace(part))
					if len(f) > 0 {
						names = append(names, strings.SplitN(strings.Trim(f[0], "()"), ".", 2)[0])
					}
				}
			}
			for _, n := range names {
				if n != "" && !own[n] && validName(n) {
					seen[n] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// Check refuses, before a run, an interpreter that cannot import a module the
// pack's .py files import.
func Check(ctx context.Context, python string, files map[string][]byte) error {
	mods := Imports(files)
	miss, err := Missing(ctx, python, mods)
	if err != nil {
		return fmt.Errorf("check the pack's Python imports: %w; %s", err, remedy)
	}
	if len(miss) == 0 {
		return nil
	}
	return fmt.Errorf("the pack's Python tools import %s, which %s cannot import: %s", strings.Join(miss, ", "), python, remedy)
}

// remedy is what a user does about a missing module: never a package index.
const remedy = "run `make python-deps` (Debian's " + Debian + " with the modules the packs import) or name an interpreter that has them with --python"

var pipHint = regexp.MustCompile(`(?i),?\s*(?:please\s+)?(?:run|try|use)?\s*` + "`?" + `pip3?\s+install\b[^\n]*`)

// RewriteHint replaces an ImportError's "run pip install ..." advice in msg with
// this project's remedy; msg without one comes back unchanged.
func RewriteHint(msg string) string {
	if !pipHint.MatchString(msg) {
		return msg
	}
	out := strings.TrimRight(pipHint.ReplaceAllString(msg, ""), " ,;:")
	return out + ": " + remedy
}
