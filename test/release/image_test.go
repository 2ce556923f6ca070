package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The image is read back here with the standard library only, not with the
// go-containerregistry that wrote it, so the layout is checked against the OCI
// spec rather than against its own writer.

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

type layoutImage struct {
	index    descriptor // the image's entry in index.json
	manifest manifest
	config   imageConfig
}

// blob reads a blob and checks it against its digest and size.
func blob(t *testing.T, dir string, d descriptor) []byte {
	t.Helper()
	alg, hexsum, ok := strings.Cut(d.Digest, ":")
	if !ok || alg != "sha256" {
		t.Fatalf("digest %q: want sha256:<hex>", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(dir, "blobs", alg, hexsum))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != hexsum {
		t.Fatalf("blob %s: content hashes to %s", d.Digest, got)
	}
	if int64(len(b)) != d.Size {
		t.Fatalf("blob %s: size %d, descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b
}

func readLayout(t *testing.T, dir string) layoutImage {
	t.Helper()
	var marker struct {
		Version string `json:"imageLayoutVersion"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	if err := json.Unmarshal(b, &marker); err != nil || marker.Version != "1.0.0" {
		t.Fatalf("oci-layout = %s (%v), want imageLayoutVersion 1.0.0", b, err)
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1 (the layout is rewritten, never appended to)", len(index.Manifests))
	}
	var li layoutImage
	li.index = index.Manifests[0]
	if err := json.Unmarshal(blob(t, dir, li.index), &li.manifest); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if err := json.Unmarshal(blob(t, dir, li.manifest.Config), &li.config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if len(li.config.RootFS.DiffIDs) != len(li.manifest.Layers) {
		t.Fatalf("config has %d diff_ids for %d layers", len(li.config.RootFS.DiffIDs), len(li.manifest.Layers))
	}
	return li
}

// unpack applies the layers in order into root and returns each path's last
// tar header (mode and owner live there, not on the unpacked files).
func unpack(t *testing.T, dir string, li layoutImage, root string) map[string]*tar.Header {
	t.Helper()
	hdrs := map[string]*tar.Header{}
	for i, l := range li.manifest.Layers {
		if !strings.HasSuffix(l.MediaType, "tar+gzip") && !strings.HasSuffix(l.MediaType, ".tar.gzip") {
			t.Fatalf("layer %d: media type %q, want a gzipped tar", i, l.MediaType)
		}
		zr, err := gzip.NewReader(bytes.NewReader(blob(t, dir, l)))
		if err != nil {
			t.Fatalf("layer %d: %v", i, err)
		}
		h := sha256.New()
		tr := tar.NewReader(io.TeeReader(zr, h))
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			name := filepath.Clean(hdr.Name)
			if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
				t.Fatalf("layer %d: entry %q escapes the root", i, hdr.Name)
			}
			dst := filepath.Join(root, name)
			switch hdr.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(dst, 0o755); err != nil {
					t.Fatal(err)
				}
			case tar.TypeReg:
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, b, os.FileMode(hdr.Mode)&0o755|0o600); err != nil {
					t.Fatal(err)
				}
			case tar.TypeSymlink:
				_ = os.Remove(dst)
				if err := os.Symlink(hdr.Linkname, dst); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("layer %d: unexpected entry type %q for %s", i, hdr.Typeflag, hdr.Name)
			}
			hdrs[name] = hdr
		}
		// Drain the padding so the diff_id covers the whole tar stream.
		if _, err := io.Copy(h, zr); err != nil {
			t.Fatal(err)
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != li.config.RootFS.DiffIDs[i] {
			t.Fatalf("layer %d: uncompressed digest %s, config's diff_id %s", i, got, li.config.RootFS.DiffIDs[i])
		}
	}
	return hdrs
}

func toolPath(dir string) string { return filepath.Join(dir, "image-tool") }

// imageTool compiles the builder `make image` runs (hack/image) once.
func imageTool(t *testing.T, root, dir string) func(args ...string) result {
	t.Helper()
	tool := toolPath(dir)
	mustRun(t, 10*time.Minute, filepath.Join(root, "hack", "image"), nil, "go", "build", "-o", tool, ".")
	return func(args ...string) result {
		t.Helper()
		return run(t, 25*time.Minute, root, nil, tool, append([]string{"build"}, args...)...)
	}
}

func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the static binary and the image (minutes on a cold cache)")
	}
	root := repoRoot(t)
	version := releaseVersion(t, root)
	work := t.TempDir()
	layoutDir := filepath.Join(work, "layout")
	tarPath := filepath.Join(work, "tolokaforge.tar")

	buildImage := imageTool(t, root, work)
	r := buildImage("--source", root, "--out", layoutDir, "--tarball", tarPath)
	if r.code != 0 {
		t.Fatalf("image build: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "built tolokaforge:" + version + " (sha256:"; !strings.Contains(r.stdout, want) {
		t.Fatalf("image build said %q, want it to contain %q", r.stdout, want)
	}

	li := readLayout(t, layoutDir)
	if got := li.index.Annotations["org.opencontainers.image.ref.name"]; got != version {
		t.Errorf("layout ref.name = %q, want the version %q", got, version)
	}
	if li.index.Platform == nil || li.index.Platform.OS != "linux" {
		t.Errorf("layout platform = %+v, want linux", li.index.Platform)
	}
	if li.manifest.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type %q, want the OCI manifest", li.manifest.MediaType)
	}
	c := li.config.Config
	if c.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/tolokaforge"}) || len(c.Cmd) != 0 {
		t.Errorf("Entrypoint %q Cmd %q, want [/tolokaforge] and no Cmd", c.Entrypoint, c.Cmd)
	}
	if c.Labels["org.opencontainers.image.version"] != version || c.Labels["org.opencontainers.image.title"] != "tolokaforge" {
		t.Errorf("labels %v, want version %s and title tolokaforge", c.Labels, version)
	}
	if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
		t.Errorf("Env %q lacks SSL_CERT_FILE", c.Env)
	}
	// Empty base: user, CA, /tmp and binary, the binary last (it changes most).
	if len(li.manifest.Layers) != 4 {
		t.Fatalf("%d layers, want 4 (user, CA certificates, /tmp, binary)", len(li.manifest.Layers))
	}

	rootfs := filepath.Join(work, "rootfs")
	hdrs := unpack(t, layoutDir, li, rootfs)

	passwd, _ := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if !strings.Contains(string(passwd), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, want a nonroot user 65532:65532", passwd)
	}
	group, _ := os.ReadFile(filepath.Join(rootfs, "etc", "group"))
	if !strings.Contains(string(group), "nonroot:x:65532:") {
		t.Errorf("/etc/group = %q, want group nonroot 65532", group)
	}
	if h := hdrs["home/nonroot"]; h == nil || h.Uid != 65532 || h.Mode&0o777 != 0o700 {
		t.Errorf("/home/nonroot header %+v, want owned by 65532 with mode 0700", h)
	}
	ca, err := os.ReadFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	hostCA, herr := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil || herr != nil || !bytes.Equal(ca, hostCA) || !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("CA bundle (%d bytes, %v) differs from the build machine's (%d bytes, %v)", len(ca), err, len(hostCA), herr)
	}
	if h := hdrs["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o7777 != 0o1777 {
		t.Errorf("/tmp header %+v, want a directory with mode 1777", h)
	}
	if h := hdrs["tolokaforge"]; h == nil || h.Mode&0o777 != 0o755 || h.Uid != 0 {
		t.Errorf("/tolokaforge header %+v, want root-owned 0755", h)
	}
	if h := hdrs["usr/local/bin/tolokaforge"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/tolokaforge" {
		t.Errorf("/usr/local/bin/tolokaforge header %+v, want a symlink to /tolokaforge", h)
	}
	// The runner's tool limits wrapper, beside the binary where the runner
	// looks for it.
	if h := hdrs["tolokaforge-toolexec"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o755 || h.Uid != 0 {
		t.Errorf("/tolokaforge-toolexec header %+v, want a root-owned 0755 file", h)
	}

	// The exec agent, which the environment pod's init container runs
	// from this image with --install.
	if h := hdrs["tolokaforge-execagent"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o777 != 0o755 || h.Uid != 0 {
		t.Errorf("/tolokaforge-execagent header %+v, want a root-owned 0755 file", h)
	}

	bin := filepath.Join(rootfs, "tolokaforge")
	launcher := filepath.Join(rootfs, "tolokaforge-toolexec")
	t.Run("static trimmed binaries", func(t *testing.T) {
		for _, b := range []string{bin, launcher, filepath.Join(rootfs, "tolokaforge-execagent")} {
			f, err := elf.Open(b)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s has an ELF interpreter: it is dynamically linked, and the empty base has no libc", b)
				}
			}
			info, err := buildinfo.ReadFile(b)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
				t.Errorf("%s: build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", b, settings["CGO_ENABLED"], settings["-trimpath"])
			}
		}
	})

	t.Run("tool launcher runs", func(t *testing.T) {
		r := run(t, time.Minute, rootfs, nil, launcher)
		if r.code != 127 || !strings.Contains(r.stderr, "tolokaforge-toolexec: not started by a tolokaforge runner") {
			t.Errorf("launcher alone: exit %d stderr %q, want 127 and why", r.code, r.stderr)
		}
		// Started as the runner starts it (the tool's own argv): the limit
		// is set, then the tool runs.
		cmd := &exec.Cmd{Path: launcher, Args: []string{"sh", "-c", "ulimit -n"}}
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TOLOKAFORGE_PROC_RLIMITS=nofile=64", "TOLOKAFORGE_PROC_PATH=/bin/sh"}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "64" {
			t.Errorf("sh under the launcher with RLIMIT_NOFILE=64: %v %q, want 64", err, out)
		}
	})

	t.Run("binary runs", func(t *testing.T) {
		want := fmt.Sprintf("tolokaforge %s (engine protocol ", version)
		for _, arg := range []string{"version", "--version"} {
			r := mustRun(t, time.Minute, rootfs, nil, bin, arg)
			if !strings.HasPrefix(r.stdout, want) {
				t.Errorf("tolokaforge %s printed %q, want it to start with %q", arg, r.stdout, want)
			}
		}
		r := mustRun(t, time.Minute, rootfs, nil, bin, "runner", "--help")
		out := r.stdout + r.stderr
		for _, flag := range []string{"-listen", "-db-service-url", "-work-dir"} {
			if !strings.Contains(out, flag) {
				t.Errorf("runner --help lacks %s:\n%s", flag, out)
			}
		}
		if r := run(t, time.Minute, rootfs, nil, bin, "no-such-command"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "no-such-command"`) {
			t.Errorf("unknown command: exit %d, stderr %q; want 2 and the command named", r.code, r.stderr)
		}
	})

	t.Run("kind load tarball", func(t *testing.T) {
		var tags []struct{ RepoTags []string }
		readTarFile(t, tarPath, "manifest.json", &tags)
		if len(tags) != 1 || !slices.Equal(tags[0].RepoTags, []string{"tolokaforge:" + version}) {
			t.Errorf("tarball manifest.json %+v, want one image tagged tolokaforge:%s", tags, version)
		}
	})

	t.Run("python variant on a base", func(t *testing.T) {
		// The variant only appends the binary layer: use the image just built
		// as the base (no registry is reachable here).
		out := filepath.Join(work, "variant")
		r := buildImage("--binary", bin, "--version", version+"-python", "--base", "oci:"+layoutDir, "--out", out)
		if r.code != 0 {
			t.Fatalf("variant build: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		v := readLayout(t, out)
		if len(v.manifest.Layers) != len(li.manifest.Layers)+1 {
			t.Fatalf("variant has %d layers, want the base's %d plus the binary", len(v.manifest.Layers), len(li.manifest.Layers))
		}
		for i, l := range li.manifest.Layers {
			if v.manifest.Layers[i].Digest != l.Digest {
				t.Errorf("variant layer %d = %s, want the base's %s unchanged", i, v.manifest.Layers[i].Digest, l.Digest)
			}
		}
		vc := v.config.Config
		if !slices.Equal(vc.Entrypoint, []string{"/tolokaforge"}) || vc.User != "65532:65532" ||
			vc.Labels["org.opencontainers.image.version"] != version+"-python" ||
			vc.Labels["org.opencontainers.image.base.name"] != "oci:"+layoutDir {
			t.Errorf("variant config %+v: want entrypoint /tolokaforge, user 65532, version and base labels", vc)
		}
		if !slices.Equal(vc.Env, c.Env) {
			t.Errorf("variant Env %q, want the base's %q kept", vc.Env, c.Env)
		}
	})

	t.Run("unreachable base", func(t *testing.T) {
		out := filepath.Join(work, "unreachable")
		// A loopback port nothing listens on: refused at once.
		base := "127.0.0.1:9/tolokaforge/python:3.12-slim"
		r := buildImage("--binary", bin, "--version", version+"-python", "--base", base, "--out", out, "--skip-unreachable-base")
		if r.code != 0 || !strings.Contains(r.stdout, "SKIPPED: base image not reachable: "+base) {
			t.Errorf("skip: exit %d stdout %q, want 0 and a SKIPPED line naming the base", r.code, r.stdout)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("skipped build left %s (%v)", out, err)
		}
		r = buildImage("--binary", bin, "--version", version+"-python", "--base", base, "--out", out)
		if r.code != 1 || !strings.Contains(r.stderr, "base image not reachable: "+base) {
			t.Errorf("no skip: exit %d stderr %q, want 1 and the base named", r.code, r.stderr)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		out := filepath.Join(work, "bad")
		tool := toolPath(work)
		for _, tc := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"--binary", bin, "--version", version}, 2, "--out is required"},
			{[]string{"--out", out, "--version", version}, 2, "exactly one of --source and --binary"},
			{[]string{"--binary", bin, "--out", out}, 2, "--version is required with --binary"},
			{[]string{"--binary", bin, "--out", out, "--version", "latest"}, 1, "versioned tag"},
			{[]string{"--binary", bin, "--out", out, "--version", "bad tag!"}, 1, `version "bad tag!"`},
			{[]string{"--binary", filepath.Join(work, "missing"), "--out", out, "--version", version}, 1, "read binary"},
			{[]string{"--binary", bin, "--out", out, "--version", version, "--ca-certs", filepath.Join(work, "missing.crt")}, 1, "CA certificates"},
		} {
			r := buildImage(tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("build %q: exit %d stderr %q; want exit %d mentioning %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("build %q failed but wrote %s", tc.args, out)
			}
		}
		for _, tc := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"push", "--layout", layoutDir}, 2, "--layout and --ref are required"},
			{[]string{"push", "--layout", filepath.Join(work, "missing"), "--ref", "127.0.0.1:9/t/tolokaforge:" + version}, 1, "read layout"},
			{[]string{"push", "--layout", layoutDir, "--ref", "Not A Ref"}, 1, `--ref "Not A Ref"`},
			// A loopback port nothing listens on: the push is refused, loudly.
			{[]string{"push", "--layout", layoutDir, "--ref", "127.0.0.1:9/t/tolokaforge:" + version}, 1, "push 127.0.0.1:9/t/tolokaforge:" + version},
			{[]string{"publish"}, 2, `unknown command "publish"`},
		} {
			r := run(t, 2*time.Minute, root, nil, tool, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Errorf("%q: exit %d stderr %q; want exit %d mentioning %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
			}
		}
	})
}

func readTarFile(t *testing.T, path, name string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s (%v)", path, name, err)
		}
		if hdr.Name == name {
			if err := json.NewDecoder(tr).Decode(v); err != nil {
				t.Fatalf("%s in %s: %v", name, path, err)
			}
			return
		}
	}
}

// TestImageToolModule runs hack/image's own tests (a push to an in-process
// registry on loopback and back, reproducible digests): hack/image is a module
// of its own, so `go test ./...` at the root would not reach them otherwise.
func TestImageToolModule(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles go-containerregistry")
	}
	root := repoRoot(t)
	r := mustRun(t, 10*time.Minute, filepath.Join(root, "hack", "image"), nil, "go", "test", "-count=1", "./...")
	if !strings.Contains(r.stdout, "ok  \ttolokaforge.io/operator/hack/image") {
		t.Errorf("hack/image tests said %q, want ok", r.stdout)
	}
}
