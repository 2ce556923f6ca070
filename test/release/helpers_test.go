package release

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// repoRoot is the checkout this package lives in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, versionFile)); err != nil {
		t.Fatalf("repo root %s: %v", root, err)
	}
	return root
}

var versionRE = regexp.MustCompile(`(?m)^var version = "([^"]+)"`)

// versionFile holds the binary's `var version` line.
const versionFile = "cmd/tolokaforge/version.go"

// releaseVersion reads cmd/tolokaforge/version.go independently of hack/image, so a change in
// how either reads it shows here.
func releaseVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, versionFile))
	if err != nil {
		t.Fatal(err)
	}
	m := versionRE.FindSubmatch(b)
	if m == nil {
		t.Fatal(versionFile + " has no `var version = \"...\"` line")
	}
	v := string(m[1])
	if v == "" || v == "latest" || v == "dev" {
		t.Fatalf(versionFile+": version %q is not a release version", v)
	}
	return v
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs a command with a deadline; make's job-server variables are dropped
// so a `make test` parent does not leak into a child make.
func run(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out after %s\nstderr: %s", name, args, timeout, res.stderr)
	}
	return res
}

// mustRun fails the test unless the command exits 0.
func mustRun(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) result {
	t.Helper()
	r := run(t, timeout, dir, env, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %v: exit %d\nstdout: %s\nstderr: %s", name, args, r.code, r.stdout, r.stderr)
	}
	return r
}

// ensureTools installs the pinned kustomize and helm into bin/ (make's own
// targets, so the pins live in the Makefile only).
func ensureTools(t *testing.T, root string) (kustomize, helm string) {
	t.Helper()
	mustRun(t, 20*time.Minute, root, nil, "make", "--no-print-directory", "-s", "release-tools")
	return filepath.Join(root, "bin", "kustomize"), filepath.Join(root, "bin", "helm")
}

// object is one decoded manifest.
type object = map[string]any

// decodeAll splits a multi-document YAML stream into objects, skipping empty
// documents (helm separates templates with them).
func decodeAll(t *testing.T, what string, data []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []object
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: decode YAML: %v", what, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

// key names an object the way `kubectl apply` tells them apart.
func key(o object) string {
	md, _ := o["metadata"].(object)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	kind, _ := o["kind"].(string)
	return kind + "/" + ns + "/" + name
}

// dig walks nested maps and lists (by index) and fails on a missing step.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch s := p.(type) {
		case string:
			m, ok := v.(object)
			if !ok {
				t.Fatalf("path %v: step %d: %T is not a map", path, i, v)
			}
			if v, ok = m[s]; !ok {
				t.Fatalf("path %v: no %q", path, s)
			}
		case int:
			l, ok := v.([]any)
			if !ok || s >= len(l) {
				t.Fatalf("path %v: step %d: not a list of more than %d items", path, i, s)
			}
			v = l[s]
		}
	}
	return v
}

// managerContainer is the manager Deployment's container "manager".
func managerContainer(t *testing.T, objs []object) object {
	t.Helper()
	for _, o := range objs {
		if o["kind"] != "Deployment" {
			continue
		}
		for _, c := range dig(t, o, "spec", "template", "spec", "containers").([]any) {
			if c := c.(object); c["name"] == "manager" {
				return c
			}
		}
	}
	t.Fatal("no Deployment with a container named manager")
	return nil
}

func envValue(t *testing.T, c object, name string) string {
	t.Helper()
	for _, e := range dig(t, c, "env").([]any) {
		if e := e.(object); e["name"] == name {
			v, _ := e["value"].(string)
			return v
		}
	}
	t.Fatalf("container %v has no env %s", c["name"], name)
	return ""
}
