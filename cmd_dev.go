//go:build dev

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"tolokaforge.io/operator/test/devcluster"
)

// devSummary is the `dev` line of the usage text.
const devSummary = "start a local control plane with the manager and the pod simulator"

// devMain runs `tolokaforge dev` until ctx ends.
func devMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	opts := devcluster.Options{Stdout: os.Stdout}
	fs.StringVar(&opts.Dir, "dir", ".dev", "directory for the kubeconfig, CRDs and artifacts")
	fs.StringVar(&opts.Assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with kube-apiserver and etcd (default $KUBEBUILDER_ASSETS; `make envtest` builds them)")
	fs.IntVar(&opts.MaxConcurrentTrials, "max-concurrent-trials", 10, "attempts driven at once")
	fs.StringVar(&opts.ArtifactsURL, "artifacts-url", "", "artifacts store (file:///DIR, s3://BUCKET/PREFIX, gs://BUCKET/PREFIX; default file://<dir>/artifacts)")
	fs.StringVar(&opts.FakeLLMScript, "fake-llm-script", "", "start the fake OpenAI-compatible LLM with this script")
	zopts := zap.Options{}
	zopts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("dev flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dev flags: unexpected arguments %q", fs.Args())
	}
	opts.Log = zap.New(zap.UseFlagOptions(&zopts))
	ctrl.SetLogger(opts.Log)
	return devcluster.Run(ctx, opts)
}
