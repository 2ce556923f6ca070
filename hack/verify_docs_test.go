package hack

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The docs check: every package doc's "Imports:" statement and docs/architecture.md's Map
// must say what the tree is. Both are read by people deciding where code
// goes, so a stale one is a wrong answer, not a cosmetic slip.
//
// The one format of the statement, in the package doc of every package with
// Go files that is not a command:
//
//	// Imports: api/task, runner/tools, the standard library,
//	// github.com/go-logr/logr and google.golang.org/grpc.
//
// project packages (paths relative to the module root, sorted), then "the
// standard library" when the package imports any of it, then the module
// path of every other library it imports (sorted); a remark in parentheses
// may follow any item, and free text may follow the statement's full stop.
// Only non-test files count, as in hack/verify-imports.sh: tests may reach
// further. Modules rather than packages are named so that using one more
// package of a library already named needs no doc change.

// pkgInfo is one package of the module as `go list` sees it.
type pkgInfo struct {
	Rel     string   // path relative to the module root, "." for the root
	Name    string   // package name; "main" marks a command
	Dir     string   // absolute directory
	GoFiles []string // non-test files of the default build
	Imports []string // their imports, full paths
}

// importClasses says what kind of thing each imported path is.
type importClasses struct {
	module  string            // the project's module path
	project map[string]bool   // the module's packages, relative to its root
	std     map[string]bool   // standard-library packages
	owner   map[string]string // third-party package -> its module path
}

// importSet is what a package imports, in the statement's terms.
type importSet struct {
	project []string // relative to the module root
	std     bool
	modules []string
}

func (c importClasses) classify(imports []string) (importSet, error) {
	var s importSet
	proj, mods := map[string]bool{}, map[string]bool{}
	for _, p := range imports {
		switch {
		case p == c.module:
			proj["."] = true
		case strings.HasPrefix(p, c.module+"/"):
			proj[strings.TrimPrefix(p, c.module+"/")] = true
		case c.std[p]:
			s.std = true
		case c.owner[p] != "":
			mods[c.owner[p]] = true
		default:
			return s, fmt.Errorf("import %q is neither the project's, the standard library's nor in a known module", p)
		}
	}
	s.project, s.modules = sortedKeys(proj), sortedKeys(mods)
	return s, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// items is the statement's list in canonical order.
func (s importSet) items() []string {
	out := append([]string(nil), s.project...)
	if s.std {
		out = append(out, "the standard library")
	}
	return append(out, s.modules...)
}

// canonicalLine renders s as the statement the package doc should carry.
func (s importSet) canonicalLine() string {
	it := s.items()
	switch len(it) {
	case 0:
		return "Imports: nothing."
	case 1:
		return "Imports: " + it[0] + "."
	}
	return "Imports: " + strings.Join(it[:len(it)-1], ", ") + " and " + it[len(it)-1] + "."
}

// packageDoc is the package documentation of the given files (all of them:
// a package may spread its doc over several files).
func packageDoc(dir string, files []string) (string, error) {
	var doc strings.Builder
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return "", fmt.Errorf("reading the package doc of %s: %w", filepath.Join(dir, name), err)
		}
		if f.Doc != nil {
			doc.WriteString(f.Doc.Text())
			doc.WriteString("\n")
		}
	}
	return doc.String(), nil
}

var (
	importsStart = regexp.MustCompile(`(?m)^Imports:`)
	// The phrasings the statement replaced; one way of saying it keeps
	// every package under the check.
	legacyImports = regexp.MustCompile(`(?i)\b(this package|it) imports\b`)
	itemSep       = regexp.MustCompile(`\s*,\s*(?:and\s+)?|\s+and\s+`)
	projectPath   = regexp.MustCompile(`^[a-z0-9_]+(/[a-z0-9_]+)*$`)
)

// parseImports reads the statement that starts at the beginning of text
// (just after "Imports:"): items up to the first full stop outside
// parentheses, parenthesised remarks dropped.
func parseImports(text string) ([]string, error) {
	text = strings.Join(strings.Fields(text), " ")
	var b strings.Builder
	depth, end := 0, -1
	for i := 0; i < len(text) && end < 0; i++ {
		switch c := text[i]; {
		case c == '(':
			depth++
		case c == ')':
			if depth == 0 {
				return nil, errors.New("unbalanced ')'")
			}
			depth--
		case depth > 0:
		case c == '.' && (i+1 == len(text) || text[i+1] == ' '):
			end = i
		default:
			b.WriteByte(c)
		}
	}
	if end < 0 {
		return nil, errors.New("no full stop ends it")
	}
	list := strings.TrimSpace(b.String())
	if list == "nothing" {
		return nil, nil
	}
	var items []string
	for _, it := range itemSep.Split(list, -1) {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	return items, nil
}

// checkImportsDoc compares the package doc's statement with what the
// package imports and returns what is wrong, each problem naming the package.
func checkImportsDoc(p pkgInfo, doc string, cls importClasses) []string {
	var probs []string
	fail := func(format string, args ...any) {
		probs = append(probs, p.Rel+": "+fmt.Sprintf(format, args...))
	}
	got, err := cls.classify(p.Imports)
	if err != nil {
		return []string{p.Rel + ": " + err.Error()}
	}
	want := "want: " + got.canonicalLine()
	if m := legacyImports.FindString(doc); m != "" {
		fail("the package doc says %q; say it in its one Imports: statement (%s)", m, want)
	}
	starts := importsStart.FindAllStringIndex(doc, -1)
	switch {
	case len(starts) == 0 && p.Name == "main":
		return probs // a command's doc describes the command
	case len(starts) == 0 && len(p.Imports) == 0:
		return probs // a doc-only package (a test suite's) has nothing to state
	case len(starts) == 0:
		fail("the package doc has no Imports: statement; %s", want)
		return probs
	case len(starts) > 1:
		fail("the package doc has %d Imports: statements, want one; %s", len(starts), want)
		return probs
	}
	items, err := parseImports(doc[starts[0][1]:])
	if err != nil {
		fail("cannot read its Imports: statement: %v; %s", err, want)
		return probs
	}
	var named importSet
	proj, mods := map[string]bool{}, map[string]bool{}
	for _, it := range items {
		switch {
		case it == "the standard library":
			named.std = true
		case strings.Contains(strings.SplitN(it, "/", 2)[0], "."):
			mods[it] = true
		case projectPath.MatchString(it) && cls.project[it]:
			proj[it] = true
		default:
			fail("its Imports: statement names %q, which is no package of the module, module path or \"the standard library\"; %s", it, want)
			return probs
		}
	}
	named.project, named.modules = sortedKeys(proj), sortedKeys(mods)
	diff := func(what string, doc, real []string) {
		if miss := minus(real, doc); len(miss) > 0 {
			fail("its Imports: statement misses %s %s; %s", what, strings.Join(miss, ", "), want)
		}
		if extra := minus(doc, real); len(extra) > 0 {
			fail("its Imports: statement names %s %s, which it does not import; %s", what, strings.Join(extra, ", "), want)
		}
	}
	diff("project package(s)", named.project, got.project)
	diff("module(s)", named.modules, got.modules)
	switch {
	case got.std && !named.std:
		fail("its Imports: statement misses the standard library; %s", want)
	case !got.std && named.std:
		fail("its Imports: statement names the standard library, which it does not import; %s", want)
	}
	if len(probs) == 0 && strings.Join(items, "|") != strings.Join(got.items(), "|") {
		fail("its Imports: statement is out of order (project packages sorted, the standard library, modules sorted); %s", want)
	}
	return probs
}

// minus is a without b, in a's order.
func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

var backticked = regexp.MustCompile("`([^`]+)`")

// mapPage is the page whose "## Map" table is the layout.
const mapPage = "docs/architecture.md"

// checkMap compares the "## Map" table (its first column) of page (named
// pageName) with the tree under root: every file and folder it names exists,
// and every top-level folder in goDirs (relative directories of the
// module's packages) is named.
func checkMap(pageName, page, root string, goDirs []string) []string {
	var probs []string
	var rows []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Map"
			continue
		}
		if in && strings.HasPrefix(line, "|") {
			rows = append(rows, line)
		}
	}
	if len(rows) < 3 {
		return []string{pageName + ": no \"## Map\" table (a header, a separator and rows)"}
	}
	named := map[string]bool{}
	for _, row := range rows[2:] { // past the header and the |---| line
		cells := strings.Split(row, "|")
		if len(cells) < 3 {
			probs = append(probs, fmt.Sprintf("%s Map: row %q has no folder column", pageName, row))
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			name := strings.TrimSuffix(m[1], "/")
			if strings.ContainsAny(name, "*?[") || strings.HasSuffix(name, ".go") {
				if files, _ := filepath.Glob(filepath.Join(root, name)); len(files) == 0 {
					probs = append(probs, fmt.Sprintf("%s Map names %s, which matches no file", pageName, m[1]))
				}
				continue
			}
			if fi, err := os.Stat(filepath.Join(root, name)); err != nil || !fi.IsDir() {
				probs = append(probs, fmt.Sprintf("%s Map names folder %s, which does not exist", pageName, m[1]))
				continue
			}
			if !strings.Contains(name, "/") {
				named[name] = true
			}
		}
	}
	top := map[string]bool{}
	for _, d := range goDirs {
		if d != "." {
			top[strings.SplitN(filepath.ToSlash(d), "/", 2)[0]] = true
		}
	}
	for _, d := range sortedKeys(top) {
		if !named[d] {
			probs = append(probs, fmt.Sprintf("%s Map does not name the top-level folder %s, which holds Go code", pageName, d))
		}
	}
	return probs
}

// goList runs `go list` at the module root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// modulePackages is every package of the module and how to classify what
// they import.
func modulePackages(t *testing.T) ([]pkgInfo, importClasses) {
	t.Helper()
	cls := importClasses{module: goList(t, "-m")[0], project: map[string]bool{}, std: map[string]bool{}, owner: map[string]string{}}
	for _, l := range goList(t, "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{with .Module}}{{.Path}}{{end}}", "./...") {
		f := strings.Split(l, "\t")
		if f[1] == "true" {
			cls.std[f[0]] = true
		} else if f[2] != cls.module {
			cls.owner[f[0]] = f[2]
		}
	}
	var pkgs []pkgInfo
	for _, l := range goList(t, "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{join .GoFiles \" \"}}\t{{join .Imports \" \"}}", "./...") {
		f := strings.Split(l, "\t")
		if len(f) != 5 {
			t.Fatalf("unexpected go list line %q", l)
		}
		rel := "."
		if f[0] != cls.module {
			rel = strings.TrimPrefix(f[0], cls.module+"/")
		}
		cls.project[rel] = true
		pkgs = append(pkgs, pkgInfo{Rel: rel, Name: f[1], Dir: f[2], GoFiles: strings.Fields(f[3]), Imports: strings.Fields(f[4])})
	}
	return pkgs, cls
}

func TestPackageDocsStateTheirImports(t *testing.T) {
	pkgs, cls := modulePackages(t)
	for _, p := range pkgs {
		if len(p.GoFiles) == 0 {
			continue // tests only (hack, test/release's suite): nothing to document
		}
		doc, err := packageDoc(p.Dir, p.GoFiles)
		if err != nil {
			t.Fatal(err)
		}
		for _, prob := range checkImportsDoc(p, doc, cls) {
			t.Error(prob)
		}
	}
}

func TestArchitectureMapIsTheTree(t *testing.T) {
	pkgs, _ := modulePackages(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, p := range pkgs {
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, rel)
	}
	page, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(mapPage)))
	if err != nil {
		t.Fatal(err)
	}
	for _, prob := range checkMap(mapPage, string(page), root, dirs) {
		t.Error(prob)
	}
}

func TestPlantedStaleImportsStatementFails(t *testing.T) {
	const m = "tolokaforge.io/operator"
	cls := importClasses{
		module:  m,
		project: map[string]bool{"api/task": true, "api/v1alpha1": true, "runner/tools": true},
		std:     map[string]bool{"fmt": true, "context": true},
		owner:   map[string]string{"cel.dev/cel-go/cel": "cel.dev/cel-go", "google.golang.org/grpc/codes": "google.golang.org/grpc"},
	}
	imports := []string{"fmt", m + "/api/task", m + "/runner/tools", "google.golang.org/grpc/codes"}
	const canonical = "Imports: api/task, runner/tools, the standard library and google.golang.org/grpc."
	cases := []struct {
		name, pkgName, doc string
		want               []string // substrings of the problems, in order; none means it passes
		imports            []string // nil: the default imports
	}{
		{"canonical", "p", "// Imports: api/task, runner/tools, the standard library and\n// google.golang.org/grpc.", nil, nil},
		{"remarks and free text", "p", "// Imports: api/task (the wire), runner/tools, the standard library and\n// google.golang.org/grpc (codes. only). Never the runner.", nil, nil},
		{"a project package missing", "p", "// Imports: api/task, the standard library and google.golang.org/grpc.",
			[]string{"api/planted: its Imports: statement misses project package(s) runner/tools; want: " + canonical}, nil},
		{"a project package it does not import", "p", "// Imports: api/task, api/v1alpha1, runner/tools, the standard library and google.golang.org/grpc.",
			[]string{"api/planted: its Imports: statement names project package(s) api/v1alpha1, which it does not import"}, nil},
		{"a module missing", "p", "// Imports: api/task, runner/tools and the standard library.",
			[]string{"api/planted: its Imports: statement misses module(s) google.golang.org/grpc"}, nil},
		{"only the standard library, stale", "p", "// Imports: the standard library.",
			[]string{"misses project package(s) api/task, runner/tools", "misses module(s) google.golang.org/grpc"}, nil},
		{"a module it does not import", "p", "// Imports: api/task, runner/tools, the standard library, cel.dev/cel-go and google.golang.org/grpc.",
			[]string{"names module(s) cel.dev/cel-go, which it does not import"}, nil},
		{"out of order", "p", "// Imports: runner/tools, api/task, the standard library and google.golang.org/grpc.",
			[]string{"out of order"}, nil},
		{"no statement", "p", "// Package p does things.",
			[]string{"api/planted: the package doc has no Imports: statement; want: " + canonical}, nil},
		{"a command needs none", "main", "// Command p does things.", nil, nil},
		{"the old phrasing", "p", "// This package imports only the standard library.",
			[]string{`says "This package imports"`, "no Imports: statement"}, nil},
		{"two statements", "p", "// Imports: api/task.\n//\n// Imports: runner/tools.",
			[]string{"2 Imports: statements"}, nil},
		{"a library by its short name", "p", "// Imports: api/task, runner/tools, the standard library and grpc.",
			[]string{`names "grpc", which is no package of the module`}, nil},
		{"a project package that does not exist", "p", "// Imports: api/task, runner/tools, runner/gone, the standard library and google.golang.org/grpc.",
			[]string{`names "runner/gone", which is no package of the module`}, nil},
		{"a doc-only package needs none", "p", "// Package p is a test suite.", nil, []string{}},
		{"an import of no known module", "p", "// Imports: nothing.",
			[]string{`import "example.com/x" is neither the project's`}, []string{"example.com/x"}},
		{"no full stop", "p", "// Imports: api/task, runner/tools, the standard library and google.golang.org/grpc",
			[]string{"no full stop"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := tc.doc + "\npackage " + tc.pkgName + "\n"
			if err := os.WriteFile(filepath.Join(dir, "doc.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			imps := imports
			if tc.imports != nil {
				imps = tc.imports
			}
			p := pkgInfo{Rel: "api/planted", Name: tc.pkgName, Dir: dir, GoFiles: []string{"doc.go"}, Imports: imps}
			doc, err := packageDoc(p.Dir, p.GoFiles)
			if err != nil {
				t.Fatal(err)
			}
			probs := checkImportsDoc(p, doc, cls)
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", probs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %q, want it to contain %q", probs[i], w)
				}
			}
		})
	}
}

func TestPlantedStaleMapFails(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"api/task", "runner", "results/local"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"main.go", "cmd_trial.go"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goDirs := []string{".", "api/task", "runner", "results/local"}
	const head = "# x\n\n## Map\n\n| folder | what |\n|---|---|\n| `main.go`, `cmd_*.go` | the binary |\n"
	const tail = "\nDependencies point one way.\n\n## Development\n\n| `nosuch` | not the map |\n"
	cases := []struct {
		name, rows string
		want       []string
	}{
		{"the tree", "| `api/` | a |\n| `api/task` | t |\n| `runner` | r |\n| `results` | the readers; `results/local` |\n", nil},
		{"a file that does not exist", "| `api/` | a |\n| `runner` | r |\n| `results` | x |\n| `cmd_gone.go` | y |\n",
			[]string{"docs/architecture.md Map names cmd_gone.go, which matches no file"}},
		{"a folder that does not exist", "| `api/` | a |\n| `controllers/host/local` | gone |\n| `runner` | r |\n| `results` | x |\n",
			[]string{"docs/architecture.md Map names folder controllers/host/local, which does not exist"}},
		{"a top-level folder missing", "| `api/` | a |\n| `runner` | r |\n| `results/local` | only the second level |\n",
			[]string{"docs/architecture.md Map does not name the top-level folder results, which holds Go code"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := checkMap(mapPage, head+tc.rows+tail, root, goDirs)
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %d matching %q", probs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(probs[i], w) {
					t.Errorf("problem %q, want it to contain %q", probs[i], w)
				}
			}
		})
	}
	if probs := checkMap(mapPage, "# x\n\nno map here\n", root, goDirs); len(probs) != 1 || !strings.Contains(probs[0], `no "## Map" table`) {
		t.Errorf("a page without a map: %q", probs)
	}
}
