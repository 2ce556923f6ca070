package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/results/report"
)

const reportLong = `report prints a table per task x agent (n, passes, pass@1, pass^k, cost, top
failure reasons) and per agent, then per-component pass rates, for a
Campaign read from the cluster or for the trials of an artifacts directory
or store URL (--artifacts).

--html writes a self-contained page (tables, a pass^k-vs-k plot per agent,
the failing trials linked to their grade and transcript), one static page per
trial read from artifacts in <name>_trials/ beside it (the conversation with
tool calls and results, the grade with each component's reasons, the state
diff, cost and timing; every cell of the campaign table links to its trials'
pages), and aggregate.json in Tolokaforge's shape.`

// reportFlags are report's command line.
type reportFlags struct {
	artifacts, htmlFile, aggFile string
	k                            int
	kube                         *kubeFlags
}

func newReportCommand(d *deps) *cobra.Command {
	f := &reportFlags{}
	c := &cobra.Command{
		Use:   "report CAMPAIGN | --artifacts DIR|URL",
		Short: "Campaign results as a table, HTML page and aggregate.json",
		Long:  reportLong,
		Example: `  tolokaforge report shop-eval -n evals --html report.html
  tolokaforge report --artifacts results/local-20260101T000000Z`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runReportFlags(c, f, args, d)
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.artifacts, "artifacts", "", "read trials from this artifacts directory (or store URL: file://, s3://, gs://) instead of a cluster")
	fs.StringVar(&f.htmlFile, "html", "", "write the HTML report to this file (and aggregate.json beside it)")
	fs.StringVar(&f.aggFile, "aggregate", "", "write aggregate.json here (default: beside --html)")
	fs.IntVar(&f.k, "k", 0, "the k of pass^k (default: the campaign's trialsPerTask, or the most trials of a task x agent)")
	f.kube = addKubeFlags(c, "the campaign's namespace (default: the kubeconfig context's, else default)")
	return c
}

// runReport runs `tolokaforge report ARGS...` with its outputs and the
// cluster client injectable (nil: from the kubeconfig flags).
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer, c client.Reader) error {
	d := &deps{stdout: stdout, stderr: stderr, cluster: c}
	return executeCommand(ctx, newRootCommand(d), append([]string{"report"}, args...))
}

func runReportFlags(c *cobra.Command, f *reportFlags, positional []string, d *deps) error {
	ctx, stdout, stderr := c.Context(), d.stdout, d.stderr
	artifacts, htmlFile, aggFile, k := &f.artifacts, &f.htmlFile, &f.aggFile, &f.k
	if *k < 0 {
		return fmt.Errorf("report: --k must be >= 1, got %d", *k)
	}
	var (
		rep *report.Report
		err error
	)
	switch {
	case *artifacts != "" && len(positional) > 0:
		return fmt.Errorf("report: give a campaign name or --artifacts, not both (got %q and --artifacts %s)", positional, *artifacts)
	case *artifacts != "":
		dir := *artifacts
		if blobstore.IsURL(dir) {
			var cleanup func()
			if dir, cleanup, err = pullForReport(ctx, dir, *htmlFile != "", stderr); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			defer cleanup()
		}
		rep, err = report.FromArtifacts(dir)
	case len(positional) == 1:
		var r client.Reader
		var ns string
		if r, ns, err = f.kube.client(d.cluster); err == nil {
			rep, err = report.FromCampaign(ctx, r, ns, positional[0])
		}
	case len(positional) > 1:
		return fmt.Errorf("report: one campaign at a time, got %q", positional)
	default:
		c.SetOut(stderr)
		_ = c.Usage()
		return errors.New("report: name a campaign or pass --artifacts DIR")
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *k > 0 {
		rep.K = *k
	}
	if err := rep.WriteTable(stdout); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *htmlFile != "" {
		if err := rep.WriteSite(*htmlFile); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if *aggFile == "" {
			*aggFile = filepath.Join(filepath.Dir(*htmlFile), "aggregate.json")
		}
	}
	if *aggFile != "" {
		var b bytes.Buffer
		if err := rep.WriteAggregate(&b); err != nil {
			return fmt.Errorf("report: aggregate: %w", err)
		}
		if err := os.WriteFile(*aggFile, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

// pullForReport mirrors a store (file://, s3://, gs://) into a temporary
// directory the report reads as it reads a local one. cleanup removes it,
// except when an HTML page will link into it.
func pullForReport(ctx context.Context, url string, keep bool, stderr io.Writer) (string, func(), error) {
	dir, err := os.MkdirTemp("", "tolokaforge-report-")
	if err != nil {
		return "", nil, err
	}
	n, err := blobstore.Mirror(ctx, url, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	if keep {
		fmt.Fprintf(stderr, "report: %d files from the store copied to %s (the page links there)\n", n, dir)
		return dir, func() {}, nil
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
