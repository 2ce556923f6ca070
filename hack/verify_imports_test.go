package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// verifyImports runs hack/verify-imports.sh, on the module or on planted
// edges of the default build when edges is not empty.
func verifyImports(t *testing.T, edges string) (string, error) {
	t.Helper()
	return verifyBuilds(t, edges, "")
}

// verifyBuilds runs hack/verify-imports.sh on planted edges of the default
// build and of the `-tags dev` build, or on the module when both are empty.
func verifyBuilds(t *testing.T, edges, devEdges string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "verify-imports.sh")
	cmd.Env = os.Environ()
	for _, in := range []struct{ env, edges string }{{"IMPORTS_FILE", edges}, {"IMPORTS_FILE_DEV", devEdges}} {
		if in.edges == "" {
			continue
		}
		f := filepath.Join(t.TempDir(), in.env)
		if err := os.WriteFile(f, []byte(in.edges), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, in.env+"="+f)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTreeFollowsImportRules(t *testing.T) {
	if out, err := verifyImports(t, ""); err != nil {
		t.Fatalf("verify-imports on the tree: %v\n%s", err, out)
	}
}

func TestPlantedBadImportsFail(t *testing.T) {
	const m = "tolokaforge.io/operator"
	cases := []struct {
		name, edge, want string
	}{
		{"api reaches the host", m + "/api/task/pack " + m + "/api/task " + m + "/controllers/host",
			"import rule broken: api/task/pack imports controllers/host"},
		{"runner reaches the DB server", m + "/runner " + m + "/dbservice",
			"import rule broken: runner imports dbservice"},
		{"controllers embed the runner", m + "/controllers " + m + "/runner/grading",
			"import rule broken: controllers imports runner/grading"},
		{"production code links a test stand-in", m + "/controllers/manager " + m + "/test/podsim",
			"import rule broken: controllers/manager imports test/podsim"},
		{"the command line links the fake LLM", m + "/cmd/tolokaforge/cli " + m + "/test/fakellm",
			"import rule broken: cmd/tolokaforge/cli imports test/fakellm"},
		{"results reach up into the command line", m + "/results/report " + m + "/cmd/tolokaforge/cli",
			"import rule broken: results/report imports cmd/tolokaforge/cli"},
		{"a test harness reaches into the command line", m + "/test/devcluster " + m + "/cmd/tolokaforge/cli",
			"import rule broken: test/devcluster imports cmd/tolokaforge/cli"},
		{"a library builds a cobra command", m + "/results/report github.com/spf13/cobra",
			"flags parsed below the root: results/report imports github.com/spf13/cobra"},
		{"controllers reach up into results", m + "/controllers/host " + m + "/results/local",
			"import rule broken: controllers/host imports results/local"},
		{"the report embeds the runner", m + "/results/report " + m + "/runner",
			"import rule broken: results/report imports runner"},
		{"dbservice reaches controllers", m + "/dbservice " + m + "/controllers",
			"import rule broken: dbservice imports controllers"},
		{"a library parses flags", m + "/examples/shop flag " + m + "/api/canonical",
			"flags parsed below the root: examples/shop imports flag"},
		{"a test stand-in parses flags with pflag", m + "/test/fakellm github.com/spf13/pflag",
			"flags parsed below the root: test/fakellm imports github.com/spf13/pflag"},
		{"the runner's subpackages are not the pod contract", m + "/runner/grading flag",
			"flags parsed below the root: runner/grading imports flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := verifyImports(t, tc.edge+"\n")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("err %v, output:\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
	// The stated exceptions pass.
	ok := m + "/cmd/tolokaforge:main " + m + "/cmd/tolokaforge/cli\n" + m + "/results/local " + m + "/runner " + m + "/dbservice\n" +
		m + "/results/report " + m + "/controllers/campaign\n" +
		// The command line's room reaches everything but test/ and parses flags.
		m + "/cmd/tolokaforge/cli github.com/spf13/cobra github.com/spf13/pflag flag " + m + "/results/report " + m + "/controllers/manager " + m + "/runner " + m + "/dbservice " + m + "/api/task\n" +
		// package main parses flags; runner and dbservice parse their pod args.
		m + "/cmd/tolokaforge:main flag\n" + m + "/test/fakellm/cmd/fakellm:main flag " + m + "/test/fakellm\n" +
		m + "/hack/image:main github.com/spf13/pflag\n" + m + "/runner flag\n" + m + "/dbservice flag\n"
	if out, err := verifyImports(t, ok); err != nil {
		t.Fatalf("exceptions refused: %v\n%s", err, out)
	}
}

func TestPlantedBadDevImportsFail(t *testing.T) {
	const m = "tolokaforge.io/operator"
	cases := []struct {
		name, edges, devEdges, want string
	}{
		{"the dev build links the fake LLM directly", "", m + "/cmd/tolokaforge/cli " + m + "/test/fakellm",
			"import rule broken (-tags dev): cmd/tolokaforge/cli imports test/fakellm"},
		{"the dev cluster is the command line's only", "", m + "/cmd/tolokaforge:main " + m + "/test/devcluster",
			"import rule broken (-tags dev): cmd/tolokaforge imports test/devcluster"},
		{"dev-only code links a test stand-in", "", m + "/controllers/manager " + m + "/test/podsim",
			"import rule broken (-tags dev): controllers/manager imports test/podsim"},
		{"a dev-only library parses flags", "", m + "/test/devcluster flag",
			"flags parsed below the root (-tags dev): test/devcluster imports flag"},
		{"the default build links the dev cluster", m + "/cmd/tolokaforge/cli " + m + "/test/devcluster", "",
			"import rule broken: cmd/tolokaforge/cli imports test/devcluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := verifyBuilds(t, tc.edges+"\n", tc.devEdges+"\n")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("err %v, output:\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
	// An edge both builds break is reported once, for the default build.
	bad := m + "/runner " + m + "/dbservice\n"
	out, err := verifyBuilds(t, bad, bad)
	if err == nil || strings.Count(out, "runner imports dbservice") != 1 || strings.Contains(out, "(-tags dev)") {
		t.Fatalf("err %v, output:\n%s\nwant the edge reported once, for the default build", err, out)
	}
	// The stated exception: under the dev tag the command line imports test/devcluster.
	if out, err := verifyBuilds(t, m+"/cmd/tolokaforge/cli fmt\n", m+"/cmd/tolokaforge/cli fmt "+m+"/test/devcluster\n"); err != nil {
		t.Fatalf("the dev build's exception refused: %v\n%s", err, out)
	}
}

// goListDeps is every package the binary (cmd/tolokaforge) links with the given tags.
func goListDeps(t *testing.T, tags string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./cmd/tolokaforge")...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out))
}

// The production binary runs in clusters: it must not carry envtest's
// control-plane driver, the pod simulator or the fake LLM. The dev build
// must, or the check below proves nothing.
func TestProductionBinaryLinksNoTestCode(t *testing.T) {
	const m = "tolokaforge.io/operator"
	banned := func(p string) bool {
		return strings.HasPrefix(p, m+"/test/") || strings.HasPrefix(p, "sigs.k8s.io/controller-runtime/pkg/envtest")
	}
	var linked []string
	for _, p := range goListDeps(t, "") {
		if banned(p) {
			linked = append(linked, p)
		}
	}
	if len(linked) > 0 {
		t.Fatalf("the default build links test code: %v", linked)
	}
	want := map[string]bool{m + "/test/devcluster": false, m + "/test/podsim": false, m + "/test/fakellm": false,
		"sigs.k8s.io/controller-runtime/pkg/envtest": false}
	for _, p := range goListDeps(t, "dev") {
		if _, ok := want[p]; ok {
			want[p] = true
		}
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("the -tags dev build does not link %s: `dev` lost its control plane", p)
		}
	}
}
