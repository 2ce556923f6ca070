package release

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

const (
	releaseNamespace = "tolokaforge-system"
	releaseName      = "tolokaforge"
)

// wantObjects is what an install holds; both renderings must have exactly
// these, so a test comparing two empty renderings cannot pass.
func wantObjects() []string {
	w := []string{
		"Namespace//" + releaseNamespace,
		"CustomResourceDefinition//campaigns.eval.tolokaforge.io",
		"CustomResourceDefinition//tasks.eval.tolokaforge.io",
		"CustomResourceDefinition//trials.eval.tolokaforge.io",
		"ServiceAccount/" + releaseNamespace + "/tolokaforge-manager",
		"ClusterRole//tolokaforge-manager",
		"ClusterRole//tolokaforge-editor",
		"ClusterRole//tolokaforge-viewer",
		"ClusterRoleBinding//tolokaforge-manager",
		"Deployment/" + releaseNamespace + "/tolokaforge-manager",
		"Service/" + releaseNamespace + "/tolokaforge-manager-metrics",
		"Service/" + releaseNamespace + "/tolokaforge-gateway",
	}
	sort.Strings(w)
	return w
}

func byKey(t *testing.T, what string, objs []object) map[string]object {
	t.Helper()
	m := map[string]object{}
	for _, o := range objs {
		k := key(o)
		if _, dup := m[k]; dup {
			t.Errorf("%s: %s twice", what, k)
		}
		m[k] = o
	}
	return m
}

func keys(m map[string]object) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestReleaseMatchesChart renders dist/install.yaml with `make release` and
// the Helm chart with `helm template`, and asserts the same objects field by
// field.
func TestReleaseMatchesChart(t *testing.T) {
	if testing.Short() {
		t.Skip("installs kustomize and helm into bin/ (minutes on a cold cache)")
	}
	root := repoRoot(t)
	version := releaseVersion(t, root)
	_, helm := ensureTools(t, root)
	dist := t.TempDir()

	r := mustRun(t, 5*time.Minute, root, nil, "make", "--no-print-directory", "release", "DIST="+dist)
	if !strings.Contains(r.stdout, "image tolokaforge:"+version) {
		t.Errorf("make release said %q, want the image tolokaforge:%s", r.stdout, version)
	}
	installYAML, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	install := byKey(t, "install.yaml", decodeAll(t, "install.yaml", installYAML))

	chartDir := filepath.Join(root, "config", "helm", "tolokaforge")
	r = mustRun(t, 2*time.Minute, root, nil, helm, "template", releaseName, chartDir,
		"--namespace", releaseNamespace, "--include-crds")
	chart := byKey(t, "helm template", decodeAll(t, "helm template", []byte(r.stdout)))

	if got := keys(install); !slices.Equal(got, wantObjects()) {
		t.Errorf("install.yaml objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantObjects(), "\n"))
	}
	if got := keys(chart); !slices.Equal(got, wantObjects()) {
		t.Errorf("chart objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantObjects(), "\n"))
	}
	for k, want := range install {
		got, ok := chart[k]
		if !ok {
			continue // reported above
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: chart differs from install.yaml (-install +chart):\n%s", k, d)
		}
	}

	t.Run("image everywhere", func(t *testing.T) {
		for what, objs := range map[string]map[string]object{"install.yaml": install, "chart": chart} {
			c := managerContainer(t, []object{objs["Deployment/"+releaseNamespace+"/tolokaforge-manager"]})
			img := "tolokaforge:" + version
			if c["image"] != img || envValue(t, c, "TOLOKAFORGE_IMAGE") != img || c["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("%s: image %v, TOLOKAFORGE_IMAGE %q, pull %v; want %s twice and IfNotPresent",
					what, c["image"], envValue(t, c, "TOLOKAFORGE_IMAGE"), c["imagePullPolicy"], img)
			}
		}
		r := mustRun(t, 2*time.Minute, root, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNamespace,
			"--set", "image.repository=registry.example/team/tolokaforge", "--set", "image.tag=v9.9.9")
		c := managerContainer(t, decodeAll(t, "helm template --set image", []byte(r.stdout)))
		want := "registry.example/team/tolokaforge:v9.9.9"
		if c["image"] != want || envValue(t, c, "TOLOKAFORGE_IMAGE") != want {
			t.Errorf("chart with image values: image %v, TOLOKAFORGE_IMAGE %q; want %s for both", c["image"], envValue(t, c, "TOLOKAFORGE_IMAGE"), want)
		}
		if got := envLookup(c, "TOLOKAFORGE_PYTHON_IMAGE"); got != "" {
			t.Errorf("chart without runnerPythonImage: TOLOKAFORGE_PYTHON_IMAGE %q, want it unset", got)
		}
		r = mustRun(t, 2*time.Minute, root, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNamespace,
			"--set", "runnerPythonImage=registry.example/team/tolokaforge:v9.9.9-python")
		c = managerContainer(t, decodeAll(t, "helm template --set runnerPythonImage", []byte(r.stdout)))
		if got := envLookup(c, "TOLOKAFORGE_PYTHON_IMAGE"); got != "registry.example/team/tolokaforge:v9.9.9-python" {
			t.Errorf("chart with runnerPythonImage: TOLOKAFORGE_PYTHON_IMAGE %q, want registry.example/team/tolokaforge:v9.9.9-python", got)
		}
	})

	t.Run("editor and viewer aggregate", func(t *testing.T) {
		for name, tc := range map[string]struct {
			labels []string
			verbs  []string
		}{
			"tolokaforge-editor": {[]string{"rbac.authorization.k8s.io/aggregate-to-admin", "rbac.authorization.k8s.io/aggregate-to-edit"},
				[]string{"create", "delete", "get", "list", "patch", "update", "watch"}},
			"tolokaforge-viewer": {[]string{"rbac.authorization.k8s.io/aggregate-to-view"}, []string{"get", "list", "watch"}},
		} {
			role := install["ClusterRole//"+name]
			labels := dig(t, role, "metadata", "labels").(object)
			for _, l := range tc.labels {
				if labels[l] != "true" {
					t.Errorf("%s: label %s = %v, want \"true\"", name, l, labels[l])
				}
			}
			rule := dig(t, role, "rules", 0).(object)
			var resources, verbs []string
			for _, r := range rule["resources"].([]any) {
				resources = append(resources, r.(string))
			}
			for _, v := range rule["verbs"].([]any) {
				verbs = append(verbs, v.(string))
			}
			for _, res := range []string{"trials", "tasks", "campaigns"} {
				if !slices.Contains(resources, res) {
					t.Errorf("%s: first rule resources %v lack %s", name, resources, res)
				}
			}
			for _, v := range tc.verbs {
				if !slices.Contains(verbs, v) {
					t.Errorf("%s: verbs %v lack %s", name, verbs, v)
				}
			}
			if name == "tolokaforge-viewer" && slices.ContainsFunc(verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
				t.Errorf("viewer may %v, want read only", verbs)
			}
		}
	})
	t.Run("manager reads no Secrets cluster-wide", func(t *testing.T) {
		for what, objs := range map[string]map[string]object{"install.yaml": install, "chart": chart} {
			for _, r := range dig(t, objs["ClusterRole//tolokaforge-manager"], "rules").([]any) {
				for _, res := range r.(object)["resources"].([]any) {
					if res == "secrets" {
						t.Errorf("%s: the manager's ClusterRole grants secrets: %v", what, r)
					}
				}
			}
		}
	})
}

// TestNamespaceGrantMatchesChart: the chart's trialNamespaces and
// config/namespace-grant give the manager the same Role and RoleBinding in a
// Trial namespace, and that Role is Secrets get/create/delete only (no list,
// no watch: the manager reads Secrets with a direct get).
func TestNamespaceGrantMatchesChart(t *testing.T) {
	if testing.Short() {
		t.Skip("installs kustomize and helm into bin/")
	}
	root := repoRoot(t)
	kustomize, helm := ensureTools(t, root)
	work := t.TempDir()
	mustRun(t, time.Minute, root, nil, "cp", "-R", filepath.Join(root, "config", "namespace-grant"), filepath.Join(work, "grant"))
	mustRun(t, time.Minute, filepath.Join(work, "grant"), nil, kustomize, "edit", "set", "namespace", "team-a")
	r := mustRun(t, time.Minute, work, nil, kustomize, "build", filepath.Join(work, "grant"))
	grant := byKey(t, "namespace-grant", decodeAll(t, "namespace-grant", []byte(r.stdout)))

	chartDir := filepath.Join(root, "config", "helm", "tolokaforge")
	r = mustRun(t, 2*time.Minute, root, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNamespace,
		"--set", "trialNamespaces={team-a,team-b}")
	chart := byKey(t, "helm template", decodeAll(t, "helm template", []byte(r.stdout)))

	want := []string{"Role/team-a/tolokaforge-manager-trials", "RoleBinding/team-a/tolokaforge-manager-trials"}
	if got := keys(grant); !slices.Equal(got, want) {
		t.Fatalf("namespace-grant objects %v, want %v", got, want)
	}
	for _, k := range append(want, "Role/team-b/tolokaforge-manager-trials", "RoleBinding/team-b/tolokaforge-manager-trials") {
		if _, ok := chart[k]; !ok {
			t.Errorf("chart with trialNamespaces lacks %s", k)
		}
	}
	for _, k := range want {
		if d := cmp.Diff(grant[k], chart[k]); d != "" {
			t.Errorf("%s: chart differs from config/namespace-grant (-kustomize +chart):\n%s", k, d)
		}
	}
	rules := dig(t, grant["Role/team-a/tolokaforge-manager-trials"], "rules").([]any)
	if d := cmp.Diff([]any{object{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"create", "delete", "get"}}}, rules); d != "" {
		t.Errorf("trial namespace Role rules (-want +got):\n%s", d)
	}
	subj := dig(t, grant["RoleBinding/team-a/tolokaforge-manager-trials"], "subjects", 0).(object)
	if subj["name"] != "tolokaforge-manager" || subj["namespace"] != releaseNamespace {
		t.Errorf("RoleBinding subject %v, want the manager's ServiceAccount in %s", subj, releaseNamespace)
	}
}

// TestSetImageChangesAllThree: `kustomize edit set image`, in config/manager or
// in config/default, changes the manager's container and $TOLOKAFORGE_IMAGE
// (the runner and dbservice pods' image) together.
func TestSetImageChangesAllThree(t *testing.T) {
	if testing.Short() {
		t.Skip("installs kustomize into bin/")
	}
	root := repoRoot(t)
	kustomize, _ := ensureTools(t, root)
	for _, where := range []string{"manager", "default"} {
		t.Run(where, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config")
			for _, d := range []string{"crd", "rbac", "manager", "default"} {
				if err := os.CopyFS(filepath.Join(cfg, d), os.DirFS(filepath.Join(root, "config", d))); err != nil {
					t.Fatal(err)
				}
			}
			want := "registry.example/team/tolokaforge:v9.9.9-" + where
			mustRun(t, time.Minute, filepath.Join(cfg, where), nil, kustomize, "edit", "set", "image", "tolokaforge="+want)
			r := mustRun(t, 2*time.Minute, root, nil, kustomize, "build", filepath.Join(cfg, "default"))
			c := managerContainer(t, decodeAll(t, "kustomize build", []byte(r.stdout)))
			if c["image"] != want || envValue(t, c, "TOLOKAFORGE_IMAGE") != want || c["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("image %v, TOLOKAFORGE_IMAGE %q, pull %v; want %s for both and IfNotPresent",
					c["image"], envValue(t, c, "TOLOKAFORGE_IMAGE"), c["imagePullPolicy"], want)
			}
			if !slices.Contains(dig(t, c, "args").([]any), any("manager")) {
				t.Errorf("args %v: want the manager subcommand", c["args"])
			}
		})
	}
}

// TestVersionsAgree: the tag config/manager sets and the chart's appVersion are
// cmd/tolokaforge/version.go's, so a release bump that misses one fails here.
func TestVersionsAgree(t *testing.T) {
	root := repoRoot(t)
	version := releaseVersion(t, root)
	var kust struct {
		Images []map[string]string `yaml:"images"`
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "manager", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &kust); err != nil {
		t.Fatal(err)
	}
	if len(kust.Images) != 1 || kust.Images[0]["name"] != "tolokaforge" || kust.Images[0]["newTag"] != version {
		t.Errorf("config/manager images %v, want tolokaforge tagged %s", kust.Images, version)
	}
	var chart map[string]any
	b, err = os.ReadFile(filepath.Join(root, "config", "helm", "tolokaforge", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatal(err)
	}
	if chart["appVersion"] != version || chart["name"] != "tolokaforge" {
		t.Errorf("Chart.yaml name %v appVersion %v, want tolokaforge and %s", chart["name"], chart["appVersion"], version)
	}
}
