package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/cmd/tolokaforge/cli/imagebuild"
)

const packBuildLong = `pack build converts task directories like pack import and, for every terminal
task whose environment ships a Dockerfile and names no image, builds that
Dockerfile with buildah (buildah bud --pull=missing --layers, chroot
isolation: no daemon; base images are taken from buildah's local storage
when there, e.g. Debian's from make base-images), from the task's build
context (environment/ for Harbor, the task folder for Terminal-Bench 1). The
image is tagged REGISTRY/tolokaforge-tasks/<task>:<ctx>, <ctx> the first 16
hex of the SHA-256 of the build context, pushed, and its digest reference
REGISTRY/tolokaforge-tasks/<task>@sha256:... is written into the Task's
environment.image.

A build whose <ctx> tag the registry already has is not run again: its
digest is reused. Each task prints "built|reused <task> <image@digest>
(<seconds> s)" on stderr. A failed build writes nothing, naming the task,
its log (--log-dir/<task>.log) and the log's last lines; an unreachable
registry is named.

A task whose environment names an image ([environment] docker_image) is
used as given and pinned to a digest once: unless it already names one
(NAME@sha256:<64 hex>), its tag's manifest digest is asked from its
registry (Docker's rules: a first component without a dot, a colon or
localhost is Docker Hub; HTTPS, plain HTTP for loopback and for --registry
with --insecure-registry; anonymous bearer tokens) and NAME:TAG@sha256:...
is written, printing "pinned <task> <image@digest> (<seconds> s)". An image
that cannot be pinned (registry unreachable, no such tag) fails naming the
task and the image; --no-pin keeps such references as given, with a
warning line per task (each Trial then pulls whatever the tag names).`

type buildFlags struct {
	importFlags
	registry, out, logDir, builder string
	insecure, noPin                bool
}

func newPackBuildCommand(d *deps) *cobra.Command {
	f := &buildFlags{}
	c := &cobra.Command{
		Use:   "build DIR|PROJECT... --registry HOST:PORT",
		Short: "Build terminal tasks' Dockerfiles, push them and write Task manifests pinning the digests",
		Long:  packBuildLong,
		Example: `  tolokaforge pack build tasks/ --registry 127.0.0.1:5055 --insecure-registry -o tasks.yaml
  kubectl apply --server-side -f tasks.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("pack build: name at least one task directory")
			}
			return nil
		},
		RunE: func(c *cobra.Command, dirs []string) error {
			return runBuild(c.Context(), f, dirs, d.stdout, d.stderr)
		},
	}
	fs := c.Flags()
	f.register(fs, "n")
	fs.StringVar(&f.registry, "registry", "", "registry HOST:PORT[/PATH] the images are pushed to and the node pulls from (required)")
	fs.BoolVar(&f.insecure, "insecure-registry", false, "talk to the registry over plain HTTP (a registry on loopback), also when pinning images on it")
	fs.BoolVar(&f.noPin, "no-pin", false, "keep tasks' docker_image tags as given instead of pinning them to their digests (a warning per task)")
	fs.StringVarP(&f.out, "output", "o", "", "write the manifests to this file instead of stdout")
	fs.StringVar(&f.logDir, "log-dir", "", "directory of the build logs, <task>.log (default: a new temporary directory, printed at the end)")
	fs.StringVar(&f.builder, "builder", "buildah", "the image builder (only buildah)")
	return c
}

func runBuild(ctx context.Context, f *buildFlags, dirs []string, stdout, stderr io.Writer) error {
	if f.registry == "" {
		return errors.New("pack build: --registry HOST:PORT is required")
	}
	logDir, tempLogs := f.logDir, f.logDir == ""
	if tempLogs {
		d, err := os.MkdirTemp("", "tolokaforge-pack-build-")
		if err != nil {
			return fmt.Errorf("pack build: %w", err)
		}
		logDir = d
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("pack build: --log-dir: %w", err)
	}
	b, err := imagebuild.New(imagebuild.Options{Registry: f.registry, Insecure: f.insecure, Builder: f.builder, LogDir: logDir})
	if err != nil {
		return fmt.Errorf("pack build: %w", err)
	}
	resolver := b.Resolver()
	pins := map[string]string{} // each image is asked once per run
	images := func(ctx context.Context, convs []*pack.Converted) error {
		pinged := false
		for _, conv := range convs {
			env := conv.Description.Environment
			if env == nil {
				continue
			}
			if env.Image != "" {
				if err := pinImage(ctx, resolver, pins, conv, f.noPin, stderr); err != nil {
					return err
				}
				continue
			}
			if env.Build == nil {
				continue
			}
			if !pinged {
				if err := b.Ping(ctx); err != nil {
					return err
				}
				pinged = true
			}
			root, err := pack.ProjectRoot(conv.Dir)
			if err != nil {
				return err
			}
			t := imagebuild.Task{Name: conv.Name,
				Context:    filepath.Join(root, filepath.FromSlash(env.Build.Context)),
				Dockerfile: filepath.Join(root, filepath.FromSlash(env.Build.Dockerfile))}
			res, err := b.Build(ctx, t)
			if err != nil {
				return fmt.Errorf("task %s (%s): %w", conv.Description.TaskID, conv.Dir, err)
			}
			verb := "built"
			if res.Reused {
				verb = "reused"
			}
			fmt.Fprintf(stderr, "%s %s %s (%.1f s)\n", verb, conv.Description.TaskID, res.Ref, res.Took.Seconds())
			if err := conv.SetEnvironmentImage(res.Ref); err != nil {
				return err
			}
		}
		return nil
	}
	w, commit := stdout, func() error { return nil }
	if f.out != "" {
		// The file appears whole or not at all.
		tmp, err := os.CreateTemp(filepath.Dir(f.out), "."+filepath.Base(f.out)+".tmp-")
		if err != nil {
			return fmt.Errorf("pack build: -o: %w", err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		w = tmp
		commit = func() error {
			if err := tmp.Close(); err != nil {
				return err
			}
			return os.Rename(tmp.Name(), f.out)
		}
	}
	err = importPacks(ctx, "pack build", &f.importFlags, dirs, w, stderr, images)
	if ents, _ := os.ReadDir(logDir); len(ents) > 0 || !tempLogs {
		fmt.Fprintf(stderr, "build logs: %s\n", logDir)
	} else {
		_ = os.Remove(logDir) // nothing was built
	}
	if err != nil {
		return err
	}
	if err := commit(); err != nil {
		return fmt.Errorf("pack build: -o: %w", err)
	}
	return nil
}

// pinImage pins the task's own image to the digest its tag names now
// (once per image and run: pins), unless it names a digest already; with
// noPin it is kept as given and a warning printed.
func pinImage(ctx context.Context, rs *imagebuild.Resolver, pins map[string]string, conv *pack.Converted, noPin bool, stderr io.Writer) error {
	id, given := conv.Description.TaskID, conv.Description.Environment.Image
	ref, err := imagebuild.ParseReference(given)
	if err != nil {
		return fmt.Errorf("task %s (%s): %w", id, conv.Dir, err)
	}
	if ref.Pinned() {
		return nil
	}
	if noPin {
		fmt.Fprintf(stderr, "warning: %s %s not pinned (--no-pin): each Trial pulls whatever the tag names then\n", id, given)
		return nil
	}
	start := time.Now()
	pinned, ok := pins[given]
	if !ok {
		if pinned, _, err = rs.Pin(ctx, given); err != nil {
			return fmt.Errorf("task %s (%s): image %q could not be pinned to a digest (--no-pin keeps the reference as given, with a warning): %w", id, conv.Dir, given, err)
		}
		pins[given] = pinned
	}
	fmt.Fprintf(stderr, "pinned %s %s (%.1f s)\n", id, pinned, time.Since(start).Seconds())
	return conv.SetEnvironmentImage(pinned)
}
