// Package devcluster is `tolokaforge dev`: a local control plane (kube-apiserver
// and etcd built from source by hack/), the CRDs installed, the manager running
// and the pod simulator standing in for kubelet, with a kubeconfig written so
// `kubectl apply` and `kubectl get trials` work against it.
//
// It is a development tool, not a production path: it lives under test/ because
// it runs the pod simulator, which only test harnesses may use. It also holds
// the dev build's other stand-in, pack validate's judge (StandInJudge), so the
// dev build imports nothing else under test/.
//
// Imports: api/task, config, controllers/manager, test/fakellm, test/podsim, the
// standard library, github.com/go-logr/logr and sigs.k8s.io/controller-runtime.
package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"tolokaforge.io/operator/config"
	"tolokaforge.io/operator/controllers/manager"
	"tolokaforge.io/operator/test/fakellm"
	"tolokaforge.io/operator/test/podsim"
)

// Image is the image name the dev manager puts on runner and dbservice pods;
// the pod simulator maps it to this binary.
const Image = "tolokaforge:dev"

// Options configure a dev cluster.
type Options struct {
	// Dir holds the kubeconfig, the CRDs, artifacts and the ready marker.
	Dir string
	// Assets is the KUBEBUILDER_ASSETS directory (kube-apiserver, etcd).
	Assets string
	// Binary runs the simulated pods (default: this executable).
	Binary              string
	MaxConcurrentTrials int
	// FakeLLMScript, when set, starts the fake OpenAI-compatible server with
	// this script and writes its URL to Dir/fakellm-url.
	FakeLLMScript string
	// ArtifactsURL, when set, is the manager's artifacts store instead of
	// file://<Dir>/artifacts.
	ArtifactsURL string
	Log          logr.Logger
	Stdout       io.Writer
}

// Run starts the dev cluster and blocks until ctx ends, then tears it down.
func Run(ctx context.Context, opts Options) error {
	if opts.Assets == "" {
		return errors.New("dev: no control-plane binaries: pass --assets or set KUBEBUILDER_ASSETS (run `make envtest`)")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(opts.Assets, bin)); err != nil {
			return fmt.Errorf("dev: %s missing in %s (run `make envtest`): %w", bin, opts.Assets, err)
		}
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.Binary == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("dev: locate own binary: %w", err)
		}
		opts.Binary = self
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	for _, d := range []string{"pods", "artifacts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fmt.Errorf("dev: %w", err)
		}
	}
	ready := filepath.Join(dir, "ready")
	_ = os.Remove(ready)
	crdDir := filepath.Join(dir, "crds")
	if err := writeCRDs(crdDir); err != nil {
		return err
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory: opts.Assets,
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("dev: start control plane: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			opts.Log.Error(err, "stop control plane")
		}
	}()

	user, err := env.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("dev: create admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("dev: kubeconfig: %w", err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("dev: write kubeconfig: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)

	sim, err := podsim.New(podsim.Config{
		Binaries:      map[string]string{Image: opts.Binary},
		DefaultBinary: opts.Binary,
		WorkDir:       filepath.Join(dir, "pods"),
	}, cfg, opts.Log.WithName("podsim"))
	if err != nil {
		return fmt.Errorf("dev: pod simulator: %w", err)
	}
	go func() { errc <- wrap("pod simulator", sim.Run(ctx)) }()

	artifactsDir := filepath.Join(dir, "artifacts")
	if opts.ArtifactsURL != "" {
		artifactsDir = ""
	}
	go func() {
		errc <- wrap("manager", manager.Run(ctx, cfg, manager.Options{
			Image:                  Image,
			Entrypoint:             "tolokaforge",
			MaxConcurrentTrials:    opts.MaxConcurrentTrials,
			ArtifactsDir:           artifactsDir,
			ArtifactsURL:           opts.ArtifactsURL,
			MetricsBindAddress:     "0",
			HealthProbeBindAddress: "0",
			Logger:                 opts.Log.WithName("manager"),
			// The simulator runs a pod's first container only: a slot's
			// DB service would never start. Campaigns here take pods of
			// their own per attempt.
			NoSlots: true,
		}))
	}()

	if opts.FakeLLMScript != "" {
		url, stop, err := startFakeLLM(ctx, opts.FakeLLMScript)
		if err != nil {
			return err
		}
		defer stop()
		if err := os.WriteFile(filepath.Join(dir, "fakellm-url"), []byte(url+"\n"), 0o644); err != nil {
			return fmt.Errorf("dev: write fake LLM url: %w", err)
		}
		fmt.Fprintf(opts.Stdout, "fake LLM serving at %s\n", url)
	}

	if err := os.WriteFile(ready, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("dev: write ready marker: %w", err)
	}
	fmt.Fprintf(opts.Stdout, "tolokaforge dev is up.\n  export KUBECONFIG=%s\n  kubectl apply -f config/samples/ && kubectl get trials\nartifacts: %s\n",
		kubeconfigPath, filepath.Join(dir, "artifacts"))

	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		if err != nil {
			return err
		}
		return nil
	}
}

func wrap(what string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("dev: %s: %w", what, err)
}

// writeCRDs materialises the embedded CRDs, so the binary works without a checkout.
func writeCRDs(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	return fs.WalkDir(config.CRDs, config.CRDDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := config.CRDs.ReadFile(path)
		if err != nil {
			return fmt.Errorf("dev: read embedded %s: %w", path, err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(path)), data, 0o644); err != nil {
			return fmt.Errorf("dev: write %s: %w", path, err)
		}
		return nil
	})
}

func startFakeLLM(_ context.Context, script string) (string, func(), error) {
	sf, err := fakellm.LoadScript(script)
	if err != nil {
		return "", nil, fmt.Errorf("dev: --fake-llm-script: %w", err)
	}
	srv, err := fakellm.New(sf.Config())
	if err != nil {
		return "", nil, fmt.Errorf("dev: fake LLM: %w", err)
	}
	if err := srv.Start("127.0.0.1:0"); err != nil {
		return "", nil, fmt.Errorf("dev: start fake LLM: %w", err)
	}
	return srv.URL(), func() { _ = srv.Close() }, nil
}
