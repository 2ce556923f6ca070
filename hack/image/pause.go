package main

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PauseRef is the sandbox image of the e2e cluster (containerd's
// sandbox_image); a name of the project's own, so it never passes for
// registry.k8s.io/pause.
const PauseRef = "tolokaforge.local/pause:1"

// pauseUID is the nobody-like user the upstream pause image runs as.
const pauseUID = 65535

// PauseOptions is what `image pause` takes.
type PauseOptions struct {
	// Module is the hack/image directory; the program is ./pause in it.
	Module, Out, Tarball, Arch string
}

// BuildPause writes the pause image: one layer holding the static /pause.
func BuildPause(ctx context.Context, o PauseOptions, log io.Writer) (*BuildResult, error) {
	return BuildSingle(ctx, SingleOptions{Module: o.Module, Package: "./pause", Ref: PauseRef, UID: pauseUID,
		Out: o.Out, Tarball: o.Tarball, Arch: o.Arch}, log)
}

// SingleOptions is what `image single` takes: one static program of a Go
// module as the only layer of an image (the pause image, the e2e suite's
// fake LLM).
type SingleOptions struct {
	// Module is the Go module's directory and Package the program's
	// package in it (./pause, ./test/fakellm/cmd/fakellm).
	Module, Package string
	// Ref is the image's name and tag; the binary is /<last element of Package>.
	Ref string
	// UID runs the entrypoint (and its group).
	UID                int
	Out, Tarball, Arch string
}

// BuildSingle writes an image of one layer holding the static program.
func BuildSingle(ctx context.Context, o SingleOptions, log io.Writer) (*BuildResult, error) {
	if o.Out == "" && o.Tarball == "" {
		return nil, usageError{"give --out, --tarball or both"}
	}
	if o.Module == "" || o.Package == "" || o.Ref == "" {
		return nil, usageError{"give --module, --package and --ref"}
	}
	what := filepath.Base(o.Package)
	dir, err := os.MkdirTemp("", "tolokaforge-"+what+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, what)
	if err := buildBinary(ctx, o.Module, what, o.Arch, bin, o.Package, log); err != nil {
		return nil, err
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: read binary: %w", what, err)
	}
	img, err := assembleSingle(what, body, o.Arch, o.UID)
	if err != nil {
		return nil, err
	}
	tag, err := name.NewTag(o.Ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("%s: image digest: %w", what, err)
	}
	if err := writeImage(what, img, tag, tag.TagStr(), o.Out, o.Tarball); err != nil {
		return nil, err
	}
	return &BuildResult{Ref: tag.String(), Digest: digest}, nil
}

func assembleSingle(what string, binary []byte, arch string, uid int) (v1.Image, error) {
	epoch, err := buildTime()
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	add, err := addendum([]entry{{hdr: tar.Header{Typeflag: tar.TypeReg, Name: what, Mode: 0o755, Size: int64(len(binary))}, body: binary}},
		epoch, types.OCILayer, what)
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, add)
	if err != nil {
		return nil, fmt.Errorf("%s: add layer: %w", what, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", what, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/" + what}
	cf.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cf.Config.WorkingDir = "/"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("%s: set config: %w", what, err)
	}
	return img, nil
}
