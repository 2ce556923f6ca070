//go:build dev

package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"tolokaforge.io/operator/test/devcluster"
)

// newDevCommand is `tolokaforge dev`: a local control plane with the
// manager and the pod simulator, until it is stopped.
func newDevCommand(d *deps) *cobra.Command {
	opts := devcluster.Options{Stdout: d.stdout}
	zopts := zap.Options{}
	c := &cobra.Command{
		Use:   "dev",
		Short: "Start a local control plane with the manager and the pod simulator",
		Long: `dev starts kube-apiserver and etcd (--assets), installs the CRDs, and runs the
manager with the pod simulator (no kubelet, no containers: runner and DB
service pods run as processes) until it is stopped; it writes a kubeconfig
under --dir for kubectl. The simulator runs one container per pod, so a
Campaign's Trials take pods of their own per attempt here instead of warm
slots (two containers each). Only in a build with -tags dev (make build-dev,
make demo).`,
		Example: `  bin/tolokaforge-dev dev --assets "$(hack/build-envtest.sh)"`,
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if opts.Assets == "" {
				opts.Assets = os.Getenv("KUBEBUILDER_ASSETS")
			}
			opts.Log = zap.New(zap.UseFlagOptions(&zopts))
			ctrl.SetLogger(opts.Log)
			return devcluster.Run(c.Context(), opts)
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("dev flags: %w", err) })
	fs := c.Flags()
	fs.StringVar(&opts.Dir, "dir", ".dev", "directory for the kubeconfig, CRDs and artifacts")
	fs.StringVar(&opts.Assets, "assets", "", "directory with kube-apiserver and etcd (default $KUBEBUILDER_ASSETS; `make envtest` builds them)")
	fs.IntVar(&opts.MaxConcurrentTrials, "max-concurrent-trials", 10, "attempts driven at once")
	fs.StringVar(&opts.ArtifactsURL, "artifacts-url", "", "artifacts store (file:///DIR, s3://BUCKET/PREFIX, gs://BUCKET/PREFIX; default file://<dir>/artifacts)")
	fs.StringVar(&opts.FakeLLMScript, "fake-llm-script", "", "start the fake OpenAI-compatible LLM with this script")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	zopts.BindFlags(zfs)
	fs.AddGoFlagSet(zfs)
	return c
}
