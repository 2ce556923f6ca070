// Command image builds and pushes the tolokaforge container image without a
// Docker daemon, with go-containerregistry:
//
//	go run . build --source ../.. --out ../../bin/image/tolokaforge [--base REF|oci:DIR]
//	go run . push --layout ../../bin/image/tolokaforge --ref REGISTRY/tolokaforge:VERSION
//	go run . debs --cache ../../bin/debs/amd64 python3 python3-yaml ...
//	go run . build --source ../.. --debs ../../bin/debs/amd64 --out ../../bin/image/tolokaforge-python
//	go run . pause --tarball ../../bin/image/pause.tar   (the e2e cluster's sandbox image)
//	go run . single --module ../.. --package ./test/fakellm/cmd/fakellm --ref tolokaforge.local/fakellm:1 --tarball FILE
//
// Without --base the image starts from an empty base (no distroless base is
// reachable here) and carries, as separate layers, a non-root user
// (uid/gid 65532), the build machine's CA bundle, /tmp (1777) and the static
// binary at /tolokaforge. With --debs, the Debian packages `debs` cached
// (python3 and the libraries packs import) are one more layer on the empty
// base: the Python runner image, built with no registry. With --base (a
// registry image or oci:DIR) only the binary layer is appended to that base.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// usageError exits 2, like flag's own errors, so a script can tell a wrong
// call from a failed build.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"usage: image build|push|debs|pause|single [flags] (image build -h for flags)"}
	}
	switch args[0] {
	case "build":
		return runBuild(ctx, args[1:], stdout, stderr)
	case "push":
		return runPush(ctx, args[1:], stdout, stderr)
	case "debs":
		return runDebs(ctx, args[1:], stdout, stderr)
	case "pause":
		return runPause(ctx, args[1:], stdout, stderr)
	case "single":
		return runSingle(ctx, args[1:], stdout, stderr)
	default:
		return usageError{fmt.Sprintf("unknown command %q (want build, push, debs, pause or single)", args[0])}
	}
}

func runBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o BuildOptions
	fs.StringVar(&o.Source, "source", "", "root of the operator checkout; the static binary is built from it (CGO_ENABLED=0, -trimpath)")
	fs.StringVar(&o.Binary, "binary", "", "a prebuilt static linux binary instead of --source")
	fs.StringVar(&o.Launcher, "launcher", "", "with --binary: the prebuilt static tolokaforge-toolexec (runner/proc/toolexec), the runner's tool limits wrapper (default: tolokaforge-toolexec beside --binary)")
	fs.StringVar(&o.ExecAgent, "execagent", "", "with --binary: the prebuilt static tolokaforge-execagent (cmd/tolokaforge-execagent), installed into a terminal task's container by the environment pod's init container (default: tolokaforge-execagent beside --binary)")
	fs.StringVar(&o.Version, "version", "", "image version (default: the version in SOURCE/cmd/tolokaforge/version.go)")
	fs.StringVar(&o.Name, "name", "tolokaforge", "image name, used with the version as the layout's ref.name and the tarball's tag")
	fs.StringVar(&o.Out, "out", "", "directory of the OCI image layout to write (replaced)")
	fs.StringVar(&o.Tarball, "tarball", "", "also write a `docker load`/`kind load image-archive` tarball here")
	fs.StringVar(&o.Base, "base", "", "base image: a registry reference or oci:DIR (default: empty base with user, CA and /tmp layers)")
	fs.StringVar(&o.CACerts, "ca-certs", DefaultCACerts, "CA bundle copied into the empty-base image")
	fs.StringVar(&o.Arch, "arch", "amd64", "GOARCH of the binary and the image platform")
	fs.StringVar(&o.Debs, "debs", "", "cache directory filled by `image debs`: its locked Debian packages become a layer on the empty base (the Python runner image)")
	fs.BoolVar(&o.SkipUnreachableBase, "skip-unreachable-base", false, "exit 0 with a message when --base cannot be fetched")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("build: unexpected arguments %q", fs.Args())}
	}
	res, err := Build(ctx, o, stderr)
	if errors.Is(err, ErrBaseUnreachable) && o.SkipUnreachableBase {
		fmt.Fprintf(stdout, "SKIPPED: %v; nothing was written to %s\n", err, o.Out)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s (%s) in %s\n", res.Ref, res.Digest, o.Out)
	if o.Tarball != "" {
		fmt.Fprintf(stdout, "tarball for docker load / kind load image-archive: %s\n", o.Tarball)
	}
	return nil
}

func runPush(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	layoutDir := fs.String("layout", "", "OCI image layout written by build")
	ref := fs.String("ref", "", "destination, e.g. registry.example.com/team/tolokaforge:v0.1.0")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if *layoutDir == "" || *ref == "" {
		return usageError{"push: --layout and --ref are required"}
	}
	digest, err := Push(ctx, *layoutDir, *ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pushed %s@%s\n", *ref, digest)
	return nil
}

func runDebs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("debs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := DebOptions{}
	fs.StringVar(&o.Cache, "cache", "", "directory of the cached .debs and their "+LockFile)
	fs.StringVar(&o.Arch, "arch", "amd64", "GOARCH of the image; must be this machine's architecture")
	skip := fs.String("skip", strings.Join(DefaultSkipDebs, ","), "comma-separated packages left out with their dependencies")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	o.Packages = fs.Args()
	if len(o.Packages) == 0 {
		o.Packages = DefaultPythonDebs
	}
	o.Skip = strings.Split(*skip, ",")
	lock, err := FetchDebs(ctx, o, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d Debian packages for %s in %s\n", len(lock.Debs), strings.Join(lock.Roots, " "), o.Cache)
	return nil
}

func runPause(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pause", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o PauseOptions
	fs.StringVar(&o.Out, "out", "", "directory of the OCI image layout to write (replaced)")
	fs.StringVar(&o.Tarball, "tarball", "", "a `ctr images import` tarball")
	fs.StringVar(&o.Arch, "arch", "amd64", "GOARCH of the binary and the image platform")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("pause: unexpected arguments %q", fs.Args())}
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	o.Module = wd
	res, err := BuildPause(ctx, o, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s (%s)\n", res.Ref, res.Digest)
	return nil
}

func runSingle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("single", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o SingleOptions
	fs.StringVar(&o.Module, "module", "", "directory of the Go module holding the program")
	fs.StringVar(&o.Package, "package", "", "the program's package in the module, e.g. ./test/fakellm/cmd/fakellm")
	fs.StringVar(&o.Ref, "ref", "", "the image's name:tag, e.g. tolokaforge.local/fakellm:1")
	fs.IntVar(&o.UID, "uid", 65532, "user and group id the entrypoint runs as")
	fs.StringVar(&o.Out, "out", "", "directory of the OCI image layout to write (replaced)")
	fs.StringVar(&o.Tarball, "tarball", "", "a `ctr images import` tarball")
	fs.StringVar(&o.Arch, "arch", "amd64", "GOARCH of the binary and the image platform")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("single: unexpected arguments %q", fs.Args())}
	}
	res, err := BuildSingle(ctx, o, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s (%s)\n", res.Ref, res.Digest)
	return nil
}
