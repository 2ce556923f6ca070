package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/results/pull"
)

const resultsPullLong = `results pull reads the Campaign (its Trials) or the Trial of that name from
the cluster, follows each Trial's status.artifactsURL and writes its
artifacts to DIR/<agent>/trials/<task_id>/<index>/ (the latest attempt on
top, every attempt under attempts/<n>/), the layout
"tolokaforge report --artifacts DIR" reads. Store credentials come from the
provider's environment.`

func newResultsCommand(d *deps) *cobra.Command {
	c := groupCommand("results", "Fetch a campaign's or trial's artifacts: results pull NAME --out DIR", func(args []string) error {
		return fmt.Errorf("results: want subcommand \"pull\", got %q", args)
	})
	c.AddCommand(newResultsPullCommand(d))
	return c
}

func newResultsPullCommand(d *deps) *cobra.Command {
	var out string
	var kube *kubeFlags
	c := &cobra.Command{
		Use:     "pull CAMPAIGN|TRIAL --out DIR",
		Short:   "Copy a campaign's or a trial's artifacts from its store to a directory",
		Long:    resultsPullLong,
		Example: `  tolokaforge results pull shop-eval -n evals --out results/shop-eval`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("results pull: name one campaign or trial, got %q", args)
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("results pull: --out DIR is required")
			}
			r, ns, err := kube.client(d.cluster)
			if err != nil {
				return fmt.Errorf("results pull: %w", err)
			}
			if err := pull.Pull(c.Context(), r, ns, args[0], out, d.stdout); err != nil {
				return fmt.Errorf("results pull: %w", err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "directory to write the artifacts to (required)")
	kube = addKubeFlags(c, "namespace (default: the kubeconfig context's, else default)")
	return c
}

// runResults runs `tolokaforge results ARGS...` with its outputs and the
// cluster client injectable (nil: from the kubeconfig flags).
func runResults(ctx context.Context, args []string, stdout, stderr io.Writer, c client.Reader) error {
	d := &deps{stdout: stdout, stderr: stderr, cluster: c}
	return executeCommand(ctx, newRootCommand(d), append([]string{"results"}, args...))
}
