package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"tolokaforge.io/operator/api/task"
)

// harborPack is a Harbor task whose environment is built from dockerfile
// (extra: more task.toml [environment] lines).
func harborPack(t *testing.T, name, dockerfile, extra string) string {
	t.Helper()
	return writePack(t, name, map[string]string{
		"instruction.md":         "Write hello to /out.txt.\n",
		"task.toml":              "version = \"1.0\"\n[environment]\nallow_internet = false\n" + extra,
		"environment/Dockerfile": dockerfile,
		"environment/hello.txt":  "hello\n",
		"tests/test.sh":          "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n",
	})
}

// taskEnv is the environment of the stream's only Task.
func taskEnv(t *testing.T, stream []byte) *task.Environment {
	t.Helper()
	tasks, _ := readStream(t, stream)
	if len(tasks) != 1 {
		t.Fatalf("%d Tasks in the stream, want 1", len(tasks))
	}
	var d struct {
		Environment *task.Environment `json:"environment"`
	}
	if err := json.Unmarshal(tasks[0].Spec.Description.Raw, &d); err != nil || d.Environment == nil {
		t.Fatalf("description: %v, environment %v", err, d.Environment)
	}
	return d.Environment
}

// What pack build does without building: a task that names its image by
// digest is left as is and the registry is never asked (it may not even
// exist); a tag that cannot be pinned is refused unless --no-pin;
// --registry is required; an unreachable registry is named and nothing is
// written.
func TestPackBuildWithoutBuilding(t *testing.T) {
	given := "registry.example/t@sha256:" + strings.Repeat("a", 64)
	dir := harborPack(t, "given", "FROM scratch\n", fmt.Sprintf("docker_image = %q\n", given))
	var out, errb bytes.Buffer
	if err := runPack(context.Background(), []string{"build", dir, "--registry", "127.0.0.1:1", "--insecure-registry"}, &out, &errb, ""); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if env := taskEnv(t, out.Bytes()); env.Image != given {
		t.Errorf("image %q, want the task's own %q", env.Image, given)
	}
	if strings.Contains(errb.String(), "built ") || strings.Contains(errb.String(), "reused ") || strings.Contains(errb.String(), "build logs:") {
		t.Errorf("nothing to build, yet stderr says:\n%s", errb.String())
	}

	out.Reset()
	err := runPack(context.Background(), []string{"build", dir}, &out, &errb, "")
	if err == nil || !strings.Contains(err.Error(), "--registry HOST:PORT is required") {
		t.Errorf("no --registry: %v", err)
	}
	toBuild := harborPack(t, "to-build", "FROM scratch\nCOPY hello.txt /\n", "")
	outFile := filepath.Join(t.TempDir(), "tasks.yaml")
	err = runPack(context.Background(), []string{"build", toBuild, "--registry", "127.0.0.1:1", "--insecure-registry", "-o", outFile}, &out, &errb, "")
	if err == nil || !strings.Contains(err.Error(), "registry 127.0.0.1:1 unreachable") || !strings.Contains(err.Error(), "nothing written") || out.Len() != 0 {
		t.Errorf("unreachable registry: %v (%d bytes written)", err, out.Len())
	}
	if _, serr := os.Stat(outFile); serr == nil {
		t.Errorf("-o %s written although the build failed", outFile)
	}

	// A tag that cannot be pinned (registry.invalid never resolves) is
	// refused naming the task and the image; --no-pin keeps it, warning.
	tagged := "registry.invalid/tolokaforge/none:1"
	unpinnable := harborPack(t, "unpinnable", "FROM scratch\n", fmt.Sprintf("docker_image = %q\n", tagged))
	out.Reset()
	errb.Reset()
	err = runPack(context.Background(), []string{"build", unpinnable, "--registry", "127.0.0.1:1", "--insecure-registry"}, &out, &errb, "")
	if err == nil || out.Len() != 0 {
		t.Fatalf("unpinnable image: %v (%d bytes written)", err, out.Len())
	}
	for _, want := range []string{"task unpinnable", `image "` + tagged + `" could not be pinned`, "registry.invalid unreachable", "--no-pin keeps the reference as given", "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unpinnable image: error lacks %q:\n%v", want, err)
		}
	}
	out.Reset()
	errb.Reset()
	if err := runPack(context.Background(), []string{"build", unpinnable, "--registry", "127.0.0.1:1", "--no-pin"}, &out, &errb, ""); err != nil {
		t.Fatalf("--no-pin: %v\n%s", err, errb.String())
	}
	if env := taskEnv(t, out.Bytes()); env.Image != tagged {
		t.Errorf("--no-pin: image %q, want %q as given", env.Image, tagged)
	}
	if !strings.Contains(errb.String(), "warning: unpinnable "+tagged+" not pinned (--no-pin)") {
		t.Errorf("--no-pin: no warning line:\n%s", errb.String())
	}
}

// needBuildah skips unless this machine can build and serve images: root,
// Debian's buildah and docker-registry (make base-images installs them).
func needBuildah(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("buildah's storage needs root")
	}
	for _, tool := range []string{"buildah", "docker-registry"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install buildah docker-registry, or make base-images)", tool)
		}
	}
}

// startRegistry runs Debian's docker-registry on a free loopback port with
// its storage in a temporary directory, and returns HOST:PORT.
func startRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	body := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("docker-registry", "serve", cfg)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("docker-registry at %s did not answer /v2/: %v\n%s", addr, err, log.String())
		}
	}
}

// The real thing: buildah builds a Harbor task's Dockerfile (FROM scratch:
// no base image needed) from environment/, pushes it, and the Task pins
// REGISTRY/tolokaforge-tasks/<task>@sha256:...; the registry serves that
// digest. Importing again reuses it without building (the context's tag is
// in the registry); a changed context builds anew; a failing Dockerfile
// writes nothing and names the task, its log and the log's last lines.
func TestPackBuildWithBuildah(t *testing.T) {
	needBuildah(t)
	reg := startRegistry(t)
	t.Cleanup(func() {
		// The images this test tagged leave buildah's storage with it.
		out, _ := exec.Command("buildah", "images", "--format", "{{.Name}}:{{.Tag}}").Output()
		for _, ref := range strings.Fields(string(out)) {
			if strings.HasPrefix(ref, reg+"/") {
				_ = exec.Command("buildah", "rmi", "-f", ref).Run()
			}
		}
	})
	dir := harborPack(t, "hello-world", "FROM scratch\nCOPY hello.txt /hello.txt\n", "")
	logs := filepath.Join(t.TempDir(), "logs")
	args := []string{"build", dir, "--registry", reg, "--insecure-registry", "--log-dir", logs, "-n", "evals"}
	var out, errb bytes.Buffer
	if err := runPack(context.Background(), args, &out, &errb, ""); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	line := regexp.MustCompile(`(?m)^built hello-world (` + regexp.QuoteMeta(reg) + `/tolokaforge-tasks/hello-world@(sha256:[0-9a-f]{64})) \([0-9.]+ s\)$`)
	m := line.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("stderr lacks the built line:\n%s", errb.String())
	}
	t.Logf("%s", strings.TrimSpace(errb.String()))
	ref, digest := m[1], m[2]
	env := taskEnv(t, out.Bytes())
	if env.Image != ref || env.Build == nil || env.Build.Dockerfile != "environment/Dockerfile" {
		t.Errorf("environment image %q build %+v, want %s and the build kept", env.Image, env.Build, ref)
	}
	if tasks, _ := readStream(t, out.Bytes()); tasks[0].Namespace != "evals" {
		t.Errorf("namespace %q, want evals", tasks[0].Namespace)
	}
	req, _ := http.NewRequest(http.MethodHead, "http://"+reg+"/v2/tolokaforge-tasks/hello-world/manifests/"+digest, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the registry does not serve %s: %v %v", digest, err, resp)
	}
	if _, err := os.Stat(filepath.Join(logs, "hello-world.log")); err != nil {
		t.Errorf("no build log: %v", err)
	}

	// Again: reused, the same stream, into a file with -o.
	errb.Reset()
	outFile := filepath.Join(t.TempDir(), "tasks.yaml")
	if err := runPack(context.Background(), append(args, "-o", outFile), &bytes.Buffer{}, &errb, ""); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "reused hello-world "+ref+" (") {
		t.Errorf("second run did not reuse %s:\n%s", ref, errb.String())
	}
	if got, _ := os.ReadFile(outFile); !bytes.Equal(got, out.Bytes()) {
		t.Errorf("-o wrote another stream than the first run's stdout")
	}

	// A changed context is another tag: built anew, another digest.
	if err := os.WriteFile(filepath.Join(dir, "environment", "hello.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	out.Reset()
	if err := runPack(context.Background(), args, &out, &errb, ""); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if m2 := line.FindStringSubmatch(errb.String()); m2 == nil || m2[1] == ref {
		t.Errorf("changed context: want a new build with another digest:\n%s", errb.String())
	}

	// A failing build.
	bad := harborPack(t, "broken-env", "FROM scratch\nCOPY missing.txt /\n", "")
	errb.Reset()
	out.Reset()
	err := runPack(context.Background(), []string{"build", bad, "--registry", reg, "--insecure-registry", "--log-dir", logs}, &out, &errb, "")
	logFile := filepath.Join(logs, "broken-env.log")
	if err == nil || out.Len() != 0 {
		t.Fatalf("a failing build: %v, %d bytes written", err, out.Len())
	}
	for _, want := range []string{"task broken-env", "buildah bud failed", "log " + logFile, "missing.txt", "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A FROM image that is neither in buildah's storage nor reachable fails
// the build with a hint at make base-images.
func TestPackBuildMissingBase(t *testing.T) {
	needBuildah(t)
	reg := startRegistry(t)
	dir := harborPack(t, "no-base", "FROM registry.invalid/tolokaforge/none:1\nRUN true\n", "")
	var out, errb bytes.Buffer
	err := runPack(context.Background(), []string{"build", dir, "--registry", reg, "--insecure-registry", "--log-dir", t.TempDir()}, &out, &errb, "")
	if err == nil || !strings.Contains(err.Error(), "task no-base") || !strings.Contains(err.Error(), "make base-images") || out.Len() != 0 {
		t.Fatalf("missing base: %v (%d bytes written), want a failure naming the task and hinting at make base-images", err, out.Len())
	}
}

// A task's own docker_image tag is pinned to the digest the registry has
// for it: buildah pushes a tiny image to a real docker-registry on
// loopback (plain HTTP without --insecure-registry), the Task gets
// NAME:TAG@<the pushed digest>, and a second run prints the same digest.
func TestPackBuildPinsDockerImage(t *testing.T) {
	needBuildah(t)
	reg := startRegistry(t)
	image := reg + "/x:1"
	t.Cleanup(func() { _ = exec.Command("buildah", "rmi", "-f", image).Run() })
	ctxDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY f.txt /f.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "f.txt"), []byte("pin me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	digestFile := filepath.Join(t.TempDir(), "digest")
	for _, args := range [][]string{
		{"bud", "--isolation=chroot", "-t", image, ctxDir},
		{"push", "--tls-verify=false", "--digestfile", digestFile, image, "docker://" + image},
	} {
		if out, err := exec.Command("buildah", args...).CombinedOutput(); err != nil {
			t.Fatalf("buildah %s: %v\n%s", args[0], err, out)
		}
	}
	d, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	want := image + "@" + strings.TrimSpace(string(d))

	dir := harborPack(t, "own-image", "FROM scratch\n", fmt.Sprintf("docker_image = %q\n", image))
	line := regexp.MustCompile(`(?m)^pinned own-image (\S+) \([0-9.]+ s\)$`)
	for run := 1; run <= 2; run++ {
		var out, errb bytes.Buffer
		if err := runPack(context.Background(), []string{"build", dir, "--registry", reg}, &out, &errb, ""); err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, errb.String())
		}
		t.Logf("run %d: %s", run, strings.TrimSpace(errb.String()))
		if m := line.FindStringSubmatch(errb.String()); m == nil || m[1] != want {
			t.Errorf("run %d: stderr lacks \"pinned own-image %s\":\n%s", run, want, errb.String())
		}
		if env := taskEnv(t, out.Bytes()); env.Image != want {
			t.Errorf("run %d: image %q, want %q", run, env.Image, want)
		}
	}
}
