// Command tolokaforge-execagent is the exec agent: copied into a terminal
// task's container by an init container, it runs as the container's
// entrypoint (PID 1, child subreaper) and serves the ExecAgent gRPC service
// (api/execagentpb, runner/execagent) to the runner on the pod network.
//
// The token comes from --token-file or $TOLOKAFORGE_EXECAGENT_TOKEN, which
// the agent unsets before it starts anything. The agent makes itself
// non-dumpable, reaps every child, and on SIGTERM or SIGINT stops serving,
// kills what is left of its processes and exits 0. SIGHUP, SIGUSR1, SIGUSR2
// and SIGPIPE are caught and dropped (not ignored: commands start with
// every signal at its default). Build it static (CGO_ENABLED=0).
//
// --install DEST copies the agent's own executable to DEST (mode 0755,
// written to a temporary file beside DEST and renamed, so a reader never
// sees half of it) and exits 0: the environment pod's init container runs
// it from the tolokaforge image (which has no shell and no cp) to put the
// agent into the emptyDir the task's container starts it from.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"tolokaforge.io/operator/api/authn"
	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "tolokaforge-execagent: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", ":7070", "address to serve gRPC on")
	tokenFile := flag.String("token-file", "", "file holding the bearer token (else $"+execagent.TokenEnv+")")
	stateDir := flag.String("state-dir", "/.tolokaforge-execagent", "the agent's private directory (command output files)")
	maxFile := flag.Int64("max-file-bytes", execagent.DefaultMaxFileBytes, "largest file WriteFile, ReadFile, PutTar and GetTar move")
	showVersion := flag.Bool("version", false, "print the version and exit")
	install := flag.String("install", "", "copy this executable to `DEST` (mode 0755, atomically) and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return nil
	}
	if *install != "" {
		return installSelf(*install)
	}
	// The token leaves the environment before anything else can start.
	envToken := os.Getenv(execagent.TokenEnv)
	if err := os.Unsetenv(execagent.TokenEnv); err != nil {
		return fmt.Errorf("unset %s: %w", execagent.TokenEnv, err)
	}
	token := envToken
	if *tokenFile != "" {
		t, err := authn.ReadTokenFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("token: %w", err)
		}
		token = t
	}
	if token == "" {
		return fmt.Errorf("no token: pass --token-file or set %s", execagent.TokenEnv)
	}
	if err := execagent.SetNotDumpable(); err != nil {
		return err
	}
	if err := execagent.SetSubreaper(); err != nil {
		return err
	}
	// Caught and dropped rather than ignored (signal.Ignore): an ignored
	// disposition survives exec, and commands must start with SIGPIPE and
	// SIGHUP at their defaults (`yes | head` ends by SIGPIPE).
	dropped := make(chan os.Signal, 8)
	signal.Notify(dropped, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	go func() {
		for range dropped {
		}
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	srv, err := execagent.New(execagent.Options{
		Token:        token,
		StateDir:     *stateDir,
		MaxFileBytes: *maxFile,
		Version:      version,
		ReapAll:      true,
		Logger:       log,
	})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	log.Info("serving", "addr", lis.Addr().String(), "version", version, "pid", os.Getpid())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case sig := <-stop:
		log.Info("stopping", "signal", sig.String())
	case err := <-served:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopCtx, stopCancel := context.WithTimeout(ctx, 2*time.Second)
	defer stopCancel()
	srv.Stop(stopCtx)
	if _, err := srv.KillAll(ctx, &pb.KillAllRequest{GraceMs: 2000}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Warn("killing the remaining processes", "error", err.Error())
	}
	srv.Close()
	return nil
}

// installSelf copies the running executable to dest: a temporary file in
// dest's directory, fsynced, mode 0755, renamed over dest.
func installSelf(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: find own executable: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, src); err != nil {
		return fmt.Errorf("install: copy %s to %s: %w", self, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	ok = true
	return nil
}
