package nodecluster

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// pushTinyImage pushes a one-file image to the registry at addr through
// the registry API (blob uploads, then the manifest) and returns the
// manifest's digest.
func pushTinyImage(t *testing.T, addr, repo, tag string) string {
	t.Helper()
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	body := []byte("hello from the cluster registry\n")
	if err := tw.WriteHeader(&tar.Header{Name: "hello.txt", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw.Bytes())
	zw.Close()
	cfg, _ := json.Marshal(map[string]any{"architecture": runtime.GOARCH, "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{sha(raw.Bytes())}}, "config": map[string]any{}})
	upload := func(blob []byte) string {
		resp, err := http.Post("http://"+addr+"/v2/"+repo+"/blobs/uploads/", "application/octet-stream", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("start upload: %s, Location %q", resp.Status, resp.Header.Get("Location"))
		}
		u := (&url.URL{Scheme: "http", Host: addr}).ResolveReference(loc)
		q := u.Query()
		q.Set("digest", sha(blob))
		u.RawQuery = q.Encode()
		req, _ := http.NewRequest(http.MethodPut, u.String(), bytes.NewReader(blob))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("upload blob: %s", resp.Status)
		}
		return sha(blob)
	}
	manifest, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": upload(cfg), "size": len(cfg)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": upload(gz.Bytes()), "size": gz.Len()}}})
	req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(manifest))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Docker-Content-Digest") != sha(manifest) {
		t.Fatalf("put manifest: %s, digest %q, want %s", resp.Status, resp.Header.Get("Docker-Content-Digest"), sha(manifest))
	}
	return sha(manifest)
}

// TestRegistryServesContainerd: the cluster's registry (Debian's
// docker-registry with the config Up writes) answers /v2/, takes an image,
// and the real containerd, with the hosts.toml Up writes into its
// config_path, pulls that image by digest over plain HTTP (ctr with the same
// hosts directory: the resolver the CRI plugin uses for kubelet's pulls).
// Needs root, containerd and docker-registry (make e2e installs them and
// runs this with E2E_REQUIRE_NODE=1).
func TestRegistryServesContainerd(t *testing.T) {
	if os.Getuid() != 0 {
		skipOrFail(t, "needs root")
	}
	for _, tool := range []string{"containerd", "ctr", "docker-registry"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, tool+" not installed (apt-get install containerd docker-registry)")
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	regCfg := filepath.Join(dir, "registry.yml")
	if err := os.WriteFile(regCfg, []byte(registryConfig(addr, filepath.Join(dir, "registry"))), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := &watchSet{}
	stop := func(p Proc, w *watched) {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			<-w.done
		}
	}
	rp, rw, err := startProc(dir, "registry", "docker-registry", "serve", regCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(rp, rw) })
	procs.add(rw)
	if err := waitFor(context.Background(), 30*time.Second, "the registry", procs, func(ctx context.Context) error {
		return registryReady(ctx, addr)
	}); err != nil {
		t.Fatal(err)
	}
	const repo = "tolokaforge-tasks/tiny"
	digest := pushTinyImage(t, addr, repo, "v1")

	run := DefaultRunDir(dir)
	t.Cleanup(func() { _ = os.RemoveAll(run); _ = os.Remove(RunRoot) })
	ctrDir := filepath.Join(run, "containerd")
	certsDir := filepath.Join(ctrDir, "certs.d")
	if err := os.MkdirAll(filepath.Join(dir, "cni/net.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeRegistryHosts(certsDir, addr); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(certsDir, addr, "hosts.toml")); err != nil || string(b) != registryHostsTOML(addr) {
		t.Fatalf("hosts.toml: %q, %v", b, err)
	}
	cfg := filepath.Join(ctrDir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(ctrDir, filepath.Join(dir, "cni/net.d"), certsDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, cw, err := startProc(dir, "containerd", "containerd", "--config="+cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop(cp, cw)
		_ = exec.Command("umount", "-R", ctrDir).Run()
	})
	procs.add(cw)
	sock := filepath.Join(ctrDir, "containerd.sock")
	if err := waitFor(context.Background(), 60*time.Second, "containerd socket", procs, func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", sock, "version").Run()
	}); err != nil {
		t.Fatal(err)
	}
	ref := fmt.Sprintf("%s/%s@%s", addr, repo, digest)
	// No --plain-http: only hosts.toml says the registry speaks HTTP.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", "--address", sock, "-n", "k8s.io", "images", "pull", "--hosts-dir", certsDir, ref).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr images pull %s: %v\n%s\ncontainerd log:\n%s", ref, err, out, logTail(filepath.Join(dir, "logs", "containerd.log"), 20))
	}
	ls, err := exec.Command("ctr", "--address", sock, "-n", "k8s.io", "images", "ls").CombinedOutput()
	if err != nil || !strings.Contains(string(ls), digest) {
		t.Fatalf("pulled image not listed (%v):\n%s", err, ls)
	}
	if err := procs.exited(); err != nil {
		t.Fatal(err)
	}
}
