package release

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// foodDelivery is an upstream project whose tau_sync tools import pydantic
// with EmailStr (email_validator) and read a whole table dict.
const foodDelivery = "/work/shared/fixtures/tolokaforge/projects/food_delivery_2"

// TestPythonImage builds the Python runner image as `make image-python` does
// (Debian .debs from the shared cache bin/debs/<arch>, no registry), unpacks
// it into a root filesystem and runs, chrooted as the image's non-root user,
// Debian's python3 on the libraries packs import and on food_delivery_2's
// tool classes. A stub binary stands in for tolokaforge: TestImage covers the
// binary layer, which both images build the same way.
func TestPythonImage(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches Debian packages on a cold cache and builds the Python image")
	}
	if os.Geteuid() != 0 {
		t.Skip("runs the image's python3 with chroot, which needs root; run the test as root")
	}
	for _, tool := range []string{"dpkg-deb", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: the Python image is built on Debian", tool)
		}
	}
	if _, err := os.Stat(foodDelivery); err != nil {
		t.Skipf("fixture %s: %v", foodDelivery, err)
	}
	root := repoRoot(t)
	work := t.TempDir()
	buildImage := imageTool(t, root, work)
	cache := filepath.Join(root, "bin", "debs", runtime.GOARCH)

	start := time.Now()
	r := run(t, 10*time.Minute, root, nil, toolPath(work), "debs", "--cache", cache, "--arch", runtime.GOARCH,
		"python3", "python3-yaml", "python3-pydantic", "python3-email-validator")
	if r.code != 0 {
		t.Fatalf("image debs: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("debs: %s (%s)", strings.TrimSpace(r.stdout), time.Since(start).Round(time.Millisecond))

	stub := filepath.Join(work, "tolokaforge")
	for _, f := range []string{stub, filepath.Join(work, "tolokaforge-toolexec"), filepath.Join(work, "tolokaforge-execagent")} {
		if err := os.WriteFile(f, []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	layoutDir := filepath.Join(work, "layout")
	start = time.Now()
	r = buildImage("--binary", stub, "--version", "v0.0.0-python", "--arch", runtime.GOARCH, "--debs", cache, "--out", layoutDir)
	if r.code != 0 {
		t.Fatalf("image build --debs: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("build: %s", time.Since(start).Round(time.Millisecond))

	li := readLayout(t, layoutDir)
	var size int64
	for _, l := range li.manifest.Layers {
		size += l.Size
	}
	t.Logf("Python image: %d layers, %.1f MiB compressed", len(li.manifest.Layers), float64(size)/(1<<20))
	fmt.Printf("python image size: %.1f MiB compressed (%d layers)\n", float64(size)/(1<<20), len(li.manifest.Layers))

	c := li.config.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 as the Go-only image", c.User)
	}
	if c.Labels["io.tolokaforge.image.python"] != "/usr/bin/python3" {
		t.Errorf("label io.tolokaforge.image.python = %q, want /usr/bin/python3", c.Labels["io.tolokaforge.image.python"])
	}
	if !strings.Contains(c.Labels["io.tolokaforge.image.debian-packages"], "python3-pydantic=") {
		t.Errorf("label io.tolokaforge.image.debian-packages = %q, want it to list python3-pydantic", c.Labels["io.tolokaforge.image.debian-packages"])
	}
	if !slicesContain(c.Env, "PYTHONDONTWRITEBYTECODE=1") || !slicesContain(c.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") {
		t.Errorf("env %q, want PATH with /usr/bin and PYTHONDONTWRITEBYTECODE=1 (read-only root)", c.Env)
	}

	rootfs := filepath.Join(work, "rootfs")
	hdrs := unpack(t, layoutDir, li, rootfs)
	for _, p := range []string{"usr/share/man", "usr/share/doc/python3.11/changelog.Debian.gz"} {
		if _, ok := hdrs[p]; ok {
			t.Errorf("%s is in the image; man pages and changelogs are left out", p)
		}
	}
	if _, ok := hdrs["usr/share/doc/python3-pydantic/copyright"]; !ok {
		t.Error("usr/share/doc/python3-pydantic/copyright missing: licences travel with the packages")
	}
	copyTree(t, foodDelivery, filepath.Join(rootfs, "pack"))

	chroot := func(script string) string {
		t.Helper()
		// The image's user, as the pod runs it.
		r := run(t, 2*time.Minute, work, nil, "chroot", "--userspec=65532:65532", rootfs,
			"/usr/bin/python3", "-c", script)
		if r.code != 0 {
			t.Fatalf("chroot python3: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}

	t.Run("libraries", func(t *testing.T) {
		got := chroot(`import yaml, pydantic, email_validator, sqlite3, ssl, json
print(yaml.safe_load("a: [1, 2]"), pydantic.VERSION[:2])`)
		if got != "{'a': [1, 2]} 1." {
			t.Errorf("python3 said %q, want {'a': [1, 2]} 1.", got)
		}
	})

	t.Run("food_delivery_2 tools", func(t *testing.T) {
		var state struct {
			Orders map[string]json.RawMessage `json:"orders"`
		}
		b, err := os.ReadFile(filepath.Join(foodDelivery, "data", "combined_initial_state.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &state); err != nil {
			t.Fatal(err)
		}
		want, ok := state.Orders["order_1"]
		if !ok {
			t.Fatal("fixture has no order_1")
		}
		got := chroot(`import json, sys
sys.path.insert(0, "/pack")
from tau_tools.get_order_details import GetOrderDetails
from tau_tools.cancel_order import CancelOrder  # pydantic models with EmailStr
from tau_tools.data.schemas import Name
import pydantic
from pydantic import EmailStr
try:
    pydantic.parse_obj_as(EmailStr, "not an address")
    print("email accepted")
except pydantic.ValidationError:
    print("email refused")
data = json.load(open("/pack/data/combined_initial_state.json"))
print(GetOrderDetails.invoke(data, order_id="order_1"))
print(GetOrderDetails.invoke(data, order_id="order_0"))`)
		lines := strings.Split(got, "\n")
		if len(lines) != 3 {
			t.Fatalf("python3 printed %d lines, want 3:\n%s", len(lines), got)
		}
		if lines[0] != "email refused" {
			t.Errorf("EmailStr check: %q, want email refused (email_validator)", lines[0])
		}
		if !jsonEqual(t, lines[1], string(want)) {
			t.Errorf("GetOrderDetails(order_1) = %s\nwant %s", lines[1], want)
		}
		if lines[2] != `{"error": "Order with ID order_0 not found"}` {
			t.Errorf("GetOrderDetails(order_0) = %s, want the not-found error", lines[2])
		}
	})
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("not JSON: %q: %v", a, err)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// copyTree copies a read-only fixture into the root filesystem, readable by
// the image's user.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// envLookup is a container's env value, "" when the variable is not set.
func envLookup(c object, name string) string {
	env, _ := c["env"].([]any)
	for _, e := range env {
		if e, ok := e.(object); ok && e["name"] == name {
			v, _ := e["value"].(string)
			return v
		}
	}
	return ""
}
