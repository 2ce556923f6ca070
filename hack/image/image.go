package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// DefaultCACerts is where Debian and Ubuntu keep the bundle.
	DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"
	// BinaryPath is the binary's place in the image. A symlink from
	// /usr/local/bin/tolokaforge keeps the manager's default --entrypoint
	// ("tolokaforge", looked up in PATH) working on both variants.
	BinaryPath = "/tolokaforge"
	BinaryLink = "/usr/local/bin/tolokaforge"
	// LauncherPath is the runner's tool limits wrapper (package
	// runner/proc/toolexec), beside the binary, where the runner looks
	// for it: without it every tool start re-executes the whole binary.
	LauncherPath = "/tolokaforge-toolexec"
	// launcherPkg is what --source builds it from.
	launcherPkg = "./runner/proc/toolexec"
	// ExecAgentPath is the exec agent (cmd/tolokaforge-execagent, static):
	// a terminal task's environment pod's init container runs it from this
	// image as `/tolokaforge-execagent --install DEST` (the image has no
	// shell and no cp) to put it into the emptyDir the task's own container
	// starts it from.
	ExecAgentPath = "/tolokaforge-execagent"
	execAgentPkg  = "./cmd/tolokaforge-execagent"
	NonRootID     = 65532
	DefaultPath   = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// Label keys from the OCI image spec's annotations.
	LabelVersion = "org.opencontainers.image.version"
	LabelTitle   = "org.opencontainers.image.title"
	LabelBase    = "org.opencontainers.image.base.name"
	// RefNameAnnotation names the image in the layout's index.json.
	RefNameAnnotation = "org.opencontainers.image.ref.name"
	// baseFetchTimeout bounds how long an unreachable registry may stall the
	// build before it counts as unreachable.
	baseFetchTimeout = 30 * time.Second
)

// ErrBaseUnreachable marks a --base that could not be fetched.
var ErrBaseUnreachable = errors.New("base image not reachable")

// BuildOptions is what `image build` takes.
type BuildOptions struct {
	Source, Binary, Version, Name, Out, Tarball, Base, CACerts, Arch string
	// Launcher is the prebuilt tolokaforge-toolexec that goes with Binary
	// (default: tolokaforge-toolexec beside it); --source builds it.
	Launcher string
	// ExecAgent is the prebuilt static tolokaforge-execagent that goes with
	// Binary (default: tolokaforge-execagent beside it); --source builds it.
	ExecAgent           string
	SkipUnreachableBase bool
	// Debs is a cache filled by `image debs`: its locked Debian packages
	// become one layer on the empty base (the Python runner image).
	Debs string
}

// BuildResult names what was written.
type BuildResult struct {
	Ref    string
	Digest v1.Hash
}

var versionRE = regexp.MustCompile(`(?m)^var version = "([^"]+)"`)

// BinaryPackage is the tolokaforge binary's package in the checkout, and
// VersionFile the file of its `var version` line.
const (
	BinaryPackage = "./cmd/tolokaforge"
	VersionFile   = "cmd/tolokaforge/version.go"
)

// VersionFromSource reads the release version from the checkout's
// VersionFile, the one place it is written.
func VersionFromSource(root string) (string, error) {
	file := filepath.Join(root, filepath.FromSlash(VersionFile))
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read version: %w", err)
	}
	m := versionRE.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("read version: no `var version = \"...\"` line in %s", file)
	}
	return string(m[1]), nil
}

// Build writes the image as an OCI layout at o.Out (and a tarball when asked).
func Build(ctx context.Context, o BuildOptions, log io.Writer) (*BuildResult, error) {
	if o.Out == "" {
		return nil, usageError{"build: --out is required"}
	}
	if (o.Source == "") == (o.Binary == "") {
		return nil, usageError{"build: give exactly one of --source and --binary"}
	}
	if o.Version == "" {
		if o.Source == "" {
			return nil, usageError{"build: --version is required with --binary"}
		}
		v, err := VersionFromSource(o.Source)
		if err != nil {
			return nil, err
		}
		o.Version = v
	}
	tag, err := name.NewTag(o.Name + ":" + o.Version)
	if err != nil {
		return nil, fmt.Errorf("build: image name %q with version %q: %w", o.Name, o.Version, err)
	}
	if o.Version == "latest" {
		return nil, fmt.Errorf("build: version %q: releases carry a versioned tag", o.Version)
	}

	if o.Debs != "" && o.Base != "" {
		return nil, usageError{"build: --debs builds on the empty base; give --debs or --base, not both"}
	}
	// Fetch the base first: skipping must not cost a binary build.
	base, err := loadBase(ctx, o)
	if err != nil {
		return nil, err
	}
	debs, err := loadDebs(ctx, o)
	if err != nil {
		return nil, err
	}

	bin, launch, agent := o.Binary, o.Launcher, o.ExecAgent
	if o.Source != "" {
		if launch != "" || agent != "" {
			return nil, usageError{"build: --launcher and --execagent go with --binary; --source builds them"}
		}
		dir, err := os.MkdirTemp("", "tolokaforge-image-")
		if err != nil {
			return nil, fmt.Errorf("build: %w", err)
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "tolokaforge")
		if err := buildBinary(ctx, o.Source, o.Version, o.Arch, bin, BinaryPackage, log); err != nil {
			return nil, err
		}
		launch = filepath.Join(dir, filepath.Base(LauncherPath))
		if err := buildBinary(ctx, o.Source, o.Version, o.Arch, launch, launcherPkg, log); err != nil {
			return nil, err
		}
		agent = filepath.Join(dir, filepath.Base(ExecAgentPath))
		if err := buildBinary(ctx, o.Source, o.Version, o.Arch, agent, execAgentPkg, log); err != nil {
			return nil, err
		}
	} else {
		if launch == "" {
			launch = filepath.Join(filepath.Dir(bin), filepath.Base(LauncherPath))
		}
		if agent == "" {
			agent = filepath.Join(filepath.Dir(bin), filepath.Base(ExecAgentPath))
		}
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("build: read binary: %w", err)
	}
	launcher, err := os.ReadFile(launch)
	if err != nil {
		return nil, fmt.Errorf("build: read the tool launcher (give --launcher, or build it beside the binary: go build -o %s %s): %w",
			launch, launcherPkg, err)
	}
	execAgent, err := os.ReadFile(agent)
	if err != nil {
		return nil, fmt.Errorf("build: read the exec agent (give --execagent, or build it beside the binary: CGO_ENABLED=0 go build -o %s %s): %w",
			agent, execAgentPkg, err)
	}

	img, err := assemble(base, binary, launcher, execAgent, debs, o)
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("build: image digest: %w", err)
	}
	if err := writeImage("build", img, tag, o.Version, o.Out, o.Tarball,
		layout.WithPlatform(v1.Platform{OS: "linux", Architecture: o.Arch})); err != nil {
		return nil, err
	}
	return &BuildResult{Ref: tag.String(), Digest: digest}, nil
}

// writeImage writes img as the only image of a fresh OCI layout at out (when
// given; refName is its ref.name annotation) and as a `ctr images import` /
// `docker load` tarball tagged tag (when given). Errors start with what.
func writeImage(what string, img v1.Image, tag name.Tag, refName, out, tarballPath string, opts ...layout.Option) error {
	if out != "" {
		if err := os.RemoveAll(out); err != nil {
			return fmt.Errorf("%s: clear %s: %w", what, out, err)
		}
		p, err := layout.Write(out, empty.Index)
		if err != nil {
			return fmt.Errorf("%s: write layout %s: %w", what, out, err)
		}
		opts = append([]layout.Option{layout.WithAnnotations(map[string]string{RefNameAnnotation: refName})}, opts...)
		if err := p.AppendImage(img, opts...); err != nil {
			return fmt.Errorf("%s: write image to %s: %w", what, out, err)
		}
	}
	if tarballPath != "" {
		if err := tarball.WriteToFile(tarballPath, tag, img); err != nil {
			return fmt.Errorf("%s: write tarball %s: %w", what, tarballPath, err)
		}
	}
	return nil
}

// buildBinary compiles the static binary of package pkg: no cgo (the empty
// base has no libc), -trimpath (no build machine paths in the image), the
// version stamped in.
func buildBinary(ctx context.Context, root, version, arch, out, pkg string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build: go build %s in %s: %w", pkg, root, err)
	}
	return nil
}

// loadBase returns nil for the empty base.
func loadBase(ctx context.Context, o BuildOptions) (v1.Image, error) {
	if o.Base == "" {
		return nil, nil
	}
	if dir, ok := strings.CutPrefix(o.Base, "oci:"); ok {
		return imageFromLayout(dir)
	}
	ref, err := name.ParseReference(o.Base)
	if err != nil {
		return nil, fmt.Errorf("build: --base %q: %w", o.Base, err)
	}
	ctx, cancel := context.WithTimeout(ctx, baseFetchTimeout)
	defer cancel()
	img, err := remote.Image(ref, remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: o.Arch}))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBaseUnreachable, o.Base, err)
	}
	// Fetch the manifest now, so unreachability shows here and not halfway
	// through writing the layout.
	if _, err := img.Manifest(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBaseUnreachable, o.Base, err)
	}
	return img, nil
}

// imageFromLayout takes the layout's only image.
func imageFromLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("read layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("read layout %s: want exactly one image, found %d", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("read layout %s: %w", dir, err)
	}
	return img, nil
}

func assemble(base v1.Image, binary, launcher, execAgent []byte, debs *debLayer, o BuildOptions) (v1.Image, error) {
	epoch, err := buildTime()
	if err != nil {
		return nil, err
	}
	layerType := types.OCILayer
	img := base
	var adds []mutate.Addendum
	if img == nil {
		img = mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		ca, err := os.ReadFile(o.CACerts)
		if err != nil {
			return nil, fmt.Errorf("build: CA certificates: %w", err)
		}
		users := []entry{
			dir("etc", 0o755),
			file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"+
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
			file("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
			{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/", Mode: 0o755}},
			{hdr: tar.Header{Typeflag: tar.TypeDir, Name: "home/nonroot/", Mode: 0o700, Uid: NonRootID, Gid: NonRootID}},
		}
		certs := []entry{dir("etc", 0o755), dir("etc/ssl", 0o755), dir("etc/ssl/certs", 0o755),
			file("etc/ssl/certs/ca-certificates.crt", 0o644, ca)}
		tmp := []entry{dir("tmp", 0o1777)}
		for _, l := range []struct {
			what    string
			entries []entry
		}{{"non-root user 65532", users}, {"CA certificates", certs}, {"/tmp", tmp}} {
			add, err := addendum(l.entries, epoch, layerType, l.what)
			if err != nil {
				return nil, err
			}
			adds = append(adds, add)
		}
		if debs != nil {
			add, err := addendum(debs.entries, epoch, layerType, debs.what)
			if err != nil {
				return nil, err
			}
			adds = append(adds, add)
		}
	} else {
		mt, err := base.MediaType()
		if err != nil {
			return nil, fmt.Errorf("build: base media type: %w", err)
		}
		if mt == types.DockerManifestSchema2 {
			layerType = types.DockerLayer
		}
	}
	bin := []entry{
		file(strings.TrimPrefix(BinaryPath, "/"), 0o755, binary),
		file(strings.TrimPrefix(LauncherPath, "/"), 0o755, launcher),
		file(strings.TrimPrefix(ExecAgentPath, "/"), 0o755, execAgent),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(BinaryLink, "/"), Linkname: BinaryPath, Mode: 0o777}},
	}
	add, err := addendum(bin, epoch, layerType, "tolokaforge "+o.Version)
	if err != nil {
		return nil, err
	}
	adds = append(adds, add)
	img, err = mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("build: add layers: %w", err)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: epoch}
	c := &cf.Config
	c.Entrypoint = []string{BinaryPath}
	c.Cmd = nil
	c.User = fmt.Sprintf("%d:%d", NonRootID, NonRootID)
	if base == nil {
		c.Env = []string{"PATH=" + DefaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
		c.WorkingDir = "/"
		if debs != nil {
			// The root filesystem is read-only in the pod: no .pyc writes.
			c.Env = append(c.Env, "PYTHONDONTWRITEBYTECODE=1")
		}
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[LabelVersion] = o.Version
	c.Labels[LabelTitle] = o.Name
	if o.Base != "" {
		c.Labels[LabelBase] = o.Base
	}
	if debs != nil {
		c.Labels[LabelPython] = DebPython
		c.Labels[LabelDebs] = debs.summary
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("build: set config: %w", err)
	}
	return img, nil
}

// buildTime honours SOURCE_DATE_EPOCH; otherwise the epoch, so two builds of
// the same binary give the same digest.
func buildTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("build: SOURCE_DATE_EPOCH %q: want seconds since 1970: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

type entry struct {
	hdr  tar.Header
	body []byte
}

func dir(name string, mode int64) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode}}
}

func file(name string, mode int64, body []byte) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body))}, body: body}
}

func addendum(entries []entry, mtime time.Time, mt types.MediaType, what string) (mutate.Addendum, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if h.Uid == 0 && h.Gid == 0 {
			h.Uname, h.Gname = "root", "root"
		}
		if err := tw.WriteHeader(&h); err != nil {
			return mutate.Addendum{}, fmt.Errorf("build: layer %s: %w", what, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return mutate.Addendum{}, fmt.Errorf("build: layer %s: %w", what, err)
		}
	}
	if err := tw.Close(); err != nil {
		return mutate.Addendum{}, fmt.Errorf("build: layer %s: %w", what, err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(mt), tarball.WithCompressedCaching)
	if err != nil {
		return mutate.Addendum{}, fmt.Errorf("build: layer %s: %w", what, err)
	}
	return mutate.Addendum{
		Layer:     l,
		MediaType: mt,
		History:   v1.History{Created: v1.Time{Time: mtime}, CreatedBy: "hack/image", Comment: what},
	}, nil
}

// Push copies the layout's image to ref with the local Docker/Podman
// credentials (authn.DefaultKeychain).
func Push(ctx context.Context, layoutDir, dst string) (v1.Hash, error) {
	ref, err := name.ParseReference(dst)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push: --ref %q: %w", dst, err)
	}
	img, err := imageFromLayout(layoutDir)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push: %w", err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("push: digest: %w", err)
	}
	return d, nil
}
