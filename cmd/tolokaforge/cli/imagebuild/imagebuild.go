// Package imagebuild builds a terminal task's environment image for `pack
// build`: the Dockerfile the task ships, built by a real builder (Debian's
// buildah: `buildah bud`, never an interpreter of our own), pushed to a
// registry and named by digest, so the Task pins exactly what was built.
//
// The image is tagged <registry>/tolokaforge-tasks/<task>:<ctx>, where ctx
// is the first 16 hex of the SHA-256 of the build context (ContextTag: a
// deterministic tar of its files and the Dockerfile's path and content). A
// build whose tag the registry already has is not run again: its digest is
// reused (a HEAD of the tag's manifest), so a pack imports again in seconds
// and a registry whose storage outlives a CI run caches builds across runs.
//
// A task that names its own image instead (docker_image) is pinned
// (pin.go): its tag's manifest digest is asked once from its registry,
// by Docker's naming rules, and NAME:TAG@sha256:... is what the Task keeps.
//
// It lives under the command line, not in api/task/pack: it runs a builder
// and talks to a registry (api/ stays pure), and only the command line
// builds (the controller never does).
//
// Imports: the standard library.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// RepositoryPrefix is the folder of the registry every task image is under.
const RepositoryPrefix = "tolokaforge-tasks"

// Options configure a Builder.
type Options struct {
	// Registry is HOST:PORT (optionally with a path) the images are pushed to.
	Registry string
	// Insecure talks to the registry over plain HTTP (a registry on
	// loopback, the e2e node's); otherwise HTTPS with verified certificates.
	Insecure bool
	// Builder is the builder's executable: "buildah" (looked up in PATH) or a path.
	Builder string
	// LogDir receives one <task>.log per build.
	LogDir string
	// Client asks the registry for manifests; nil: a client with a 30 s timeout.
	Client *http.Client
}

// Task is one environment to build.
type Task struct {
	// Name is the task's name in the image repository (the Task object's
	// name: lowercase letters, digits and '-').
	Name string
	// Context is the build context's folder; Dockerfile the Dockerfile's
	// path (inside the context or not).
	Context, Dockerfile string
}

// Result is one built or reused image.
type Result struct {
	// Ref is REGISTRY/tolokaforge-tasks/NAME@sha256:... .
	Ref string
	// Tag is the context tag the image was looked up and pushed under.
	Tag    string
	Reused bool
	// Took is the whole step: lookup, build and push.
	Took time.Duration
	// Log is the build's log file (empty when reused).
	Log string
}

// Builder builds and pushes with one registry and builder.
type Builder struct {
	o Options
}

// New checks the options; it contacts nothing.
func New(o Options) (*Builder, error) {
	if o.Registry == "" || strings.Contains(o.Registry, "://") || strings.HasSuffix(o.Registry, "/") {
		return nil, fmt.Errorf("registry %q: want HOST[:PORT][/PATH], no scheme", o.Registry)
	}
	if o.Builder == "" {
		o.Builder = "buildah"
	}
	if filepath.Base(o.Builder) != "buildah" {
		return nil, fmt.Errorf("builder %q: only buildah is supported", o.Builder)
	}
	if o.LogDir == "" {
		return nil, errors.New("no log directory")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	return &Builder{o: o}, nil
}

var repoName = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)

// Repository is the task's image repository (without tag or digest).
func (b *Builder) Repository(name string) string {
	return b.o.Registry + "/" + RepositoryPrefix + "/" + name
}

func (b *Builder) scheme() string {
	if b.o.Insecure {
		return "http"
	}
	return "https"
}

// registryHost is the registry's host:port (the part before any path) and
// the path prefix of its repositories.
func (b *Builder) registryHost() (host, prefix string) {
	host, prefix, _ = strings.Cut(b.o.Registry, "/")
	if prefix != "" {
		prefix += "/"
	}
	return host, prefix
}

// Ping asks the registry's /v2/ endpoint: an error names the registry when
// it cannot be reached or does not speak the registry API.
func (b *Builder) Ping(ctx context.Context) error {
	host, _ := b.registryHost()
	u := b.scheme() + "://" + host + "/v2/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := b.o.Client.Do(req)
	if err != nil {
		return fmt.Errorf("registry %s unreachable (%s): %w", b.o.Registry, u, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("registry %s: GET %s: %s (not a registry API v2?)", b.o.Registry, u, resp.Status)
	}
	return nil
}

// manifestAccept are the manifest kinds a tag may name (OCI and Docker,
// images and indexes).
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
}, ", ")

// Lookup returns the digest the registry has for the task's tag, "" when
// it has none.
func (b *Builder) Lookup(ctx context.Context, name, tag string) (string, error) {
	host, prefix := b.registryHost()
	u := fmt.Sprintf("%s://%s/v2/%s%s/%s/manifests/%s", b.scheme(), host, prefix, RepositoryPrefix, name, tag)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", manifestAccept)
	resp, err := b.o.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("registry %s unreachable: HEAD %s: %w", b.o.Registry, u, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		d := resp.Header.Get("Docker-Content-Digest")
		if !digestRE.MatchString(d) {
			return "", fmt.Errorf("registry %s: HEAD %s: no Docker-Content-Digest in the answer (got %q)", b.o.Registry, u, d)
		}
		return d, nil
	case http.StatusNotFound:
		return "", nil
	}
	return "", fmt.Errorf("registry %s: HEAD %s: %s", b.o.Registry, u, resp.Status)
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Build returns the task's image by digest: the registry's when it has the
// context's tag, else built and pushed.
func (b *Builder) Build(ctx context.Context, t Task) (*Result, error) {
	start := time.Now()
	if !repoName.MatchString(t.Name) {
		return nil, fmt.Errorf("%q is not an image repository name", t.Name)
	}
	tag, err := ContextTag(t.Context, t.Dockerfile)
	if err != nil {
		return nil, err
	}
	repo := b.Repository(t.Name)
	res := &Result{Tag: tag}
	digest, err := b.Lookup(ctx, t.Name, tag)
	if err != nil {
		return nil, err
	}
	if digest != "" {
		res.Ref, res.Reused, res.Took = repo+"@"+digest, true, time.Since(start)
		return res, nil
	}
	res.Log = filepath.Join(b.o.LogDir, t.Name+".log")
	logf, err := os.Create(res.Log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	ref := repo + ":" + tag
	bud := []string{"bud",
		// Base images come from buildah's local storage when there
		// (hack/base-images.sh puts Debian's there): no registry needed.
		"--pull=missing", "--layers", "-f", t.Dockerfile, "-t", ref}
	if os.Getenv("BUILDAH_ISOLATION") == "" {
		// No daemon, no nested runtime: chroot isolation runs as root
		// anywhere buildah does.
		bud = append(bud, "--isolation=chroot")
	}
	if err := b.run(ctx, logf, res.Log, append(bud, t.Context)...); err != nil {
		return nil, err
	}
	digestFile := res.Log + ".digest"
	defer os.Remove(digestFile)
	push := []string{"push", "--digestfile", digestFile}
	if b.o.Insecure {
		push = append(push, "--tls-verify=false")
	}
	if err := b.run(ctx, logf, res.Log, append(push, ref, "docker://"+ref)...); err != nil {
		return nil, err
	}
	d, err := os.ReadFile(digestFile)
	if err != nil {
		return nil, fmt.Errorf("buildah push wrote no digest: %w", err)
	}
	if digest = strings.TrimSpace(string(d)); !digestRE.MatchString(digest) {
		return nil, fmt.Errorf("buildah push's digest file holds %q, not a sha256 digest", digest)
	}
	res.Ref, res.Took = repo+"@"+digest, time.Since(start)
	return res, nil
}

// run runs the builder with args, its output appended to the log; a
// failure names the command, the log and its last lines.
func (b *Builder) run(ctx context.Context, logf *os.File, logPath string, args ...string) error {
	fmt.Fprintf(logf, "$ %s %s\n", b.o.Builder, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, b.o.Builder, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ne *exec.Error
		if errors.As(err, &ne) {
			return fmt.Errorf("%s not found (apt-get install buildah): %w", b.o.Builder, err)
		}
		hint := ""
		if log, _ := os.ReadFile(logPath); args[0] == "bud" && bytes.Contains(log, []byte("initializing source docker://")) {
			hint = "\n  (a FROM image is neither in buildah's local storage nor pullable from here: `make base-images` puts Debian's debian:bookworm-slim there; another base needs the task's docker_image)"
		}
		return fmt.Errorf("%s %s failed (%v); log %s, last lines:\n%s%s", filepath.Base(b.o.Builder), args[0], err, logPath, Tail(logPath, 15), hint)
	}
	return nil
}

// Tail is the last n lines of the file, indented.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// ContextTag is the first 16 hex of the SHA-256 of a deterministic tar of
// the build context (every file, folder and symbolic link under dir, sorted
// by path, with their permission bits and a symbolic link's target, no
// owners or times) followed by the Dockerfile's path relative to dir and
// its content. Any change of what the build reads changes the tag.
func ContextTag(dir, dockerfile string) (string, error) {
	h := sha256.New()
	tw := tar.NewWriter(h)
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("build context %s: %w", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return "", err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("build context: %w", err)
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(fi.Mode().Perm()), Format: tar.FormatPAX}
		var body []byte
		switch {
		case fi.Mode().IsRegular():
			hdr.Typeflag = tar.TypeReg
			if body, err = os.ReadFile(p); err != nil {
				return "", fmt.Errorf("build context: %w", err)
			}
			hdr.Size = int64(len(body))
		case fi.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(p); err != nil {
				return "", fmt.Errorf("build context: %w", err)
			}
		default:
			return "", fmt.Errorf("build context: %s is neither a file, a folder nor a symbolic link", p)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", err
		}
		if _, err := tw.Write(body); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	df, err := os.ReadFile(dockerfile)
	if err != nil {
		return "", fmt.Errorf("dockerfile: %w", err)
	}
	rel, err := filepath.Rel(dir, dockerfile)
	if err != nil {
		rel = dockerfile
	}
	fmt.Fprintf(h, "\x00dockerfile %s\x00", filepath.ToSlash(rel))
	_, _ = io.Copy(h, bytes.NewReader(df))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
