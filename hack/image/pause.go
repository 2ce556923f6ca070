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
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
	if o.Out == "" && o.Tarball == "" {
		return nil, usageError{"pause: give --out, --tarball or both"}
	}
	dir, err := os.MkdirTemp("", "tolokaforge-pause-")
	if err != nil {
		return nil, fmt.Errorf("pause: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "pause")
	if err := buildBinary(ctx, o.Module, "pause", o.Arch, bin, "./pause", log); err != nil {
		return nil, err
	}
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("pause: read binary: %w", err)
	}
	img, err := assemblePause(body, o.Arch)
	if err != nil {
		return nil, err
	}
	tag, err := name.NewTag(PauseRef)
	if err != nil {
		return nil, fmt.Errorf("pause: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("pause: image digest: %w", err)
	}
	if o.Out != "" {
		if err := os.RemoveAll(o.Out); err != nil {
			return nil, fmt.Errorf("pause: clear %s: %w", o.Out, err)
		}
		p, err := layout.Write(o.Out, empty.Index)
		if err != nil {
			return nil, fmt.Errorf("pause: write layout %s: %w", o.Out, err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag.TagStr()})); err != nil {
			return nil, fmt.Errorf("pause: write image to %s: %w", o.Out, err)
		}
	}
	if o.Tarball != "" {
		if err := tarball.WriteToFile(o.Tarball, tag, img); err != nil {
			return nil, fmt.Errorf("pause: write tarball %s: %w", o.Tarball, err)
		}
	}
	return &BuildResult{Ref: tag.String(), Digest: digest}, nil
}

func assemblePause(binary []byte, arch string) (v1.Image, error) {
	epoch, err := buildTime()
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	add, err := addendum([]entry{{hdr: tar.Header{Typeflag: tar.TypeReg, Name: "pause", Mode: 0o755, Size: int64(len(binary))}, body: binary}},
		epoch, types.OCILayer, "pause")
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, add)
	if err != nil {
		return nil, fmt.Errorf("pause: add layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("pause: config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/pause"}
	cf.Config.User = fmt.Sprintf("%d:%d", pauseUID, pauseUID)
	cf.Config.WorkingDir = "/"
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("pause: set config: %w", err)
	}
	return img, nil
}
