package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/results/report"
)

const reportUsage = `usage:
  tolokaforge report CAMPAIGN [--namespace NS] [--kubeconfig PATH] [--html FILE] [--aggregate FILE] [--k N]
  tolokaforge report --artifacts DIR|URL [--html FILE] [--aggregate FILE] [--k N]

Prints a table per task x agent (n, passes, pass@1, pass^k, cost, top failure
reasons) and per agent, then per-component pass rates. --html writes a
self-contained page (tables, a pass^k-vs-k plot per agent, the failing trials
linked to their grade and transcript), one static page per trial read from
artifacts in <name>_trials/ beside it (the conversation with tool calls and
results, the grade with each component's reasons, the state diff, cost and
timing; every cell of the campaign table links to its trials' pages), and
aggregate.json in Tolokaforge's shape.`

// reportMain runs `tolokaforge report`.
func reportMain(ctx context.Context, args []string) error {
	return runReport(ctx, args, os.Stdout, os.Stderr, nil)
}

// runReport is reportMain with its outputs and the cluster client injectable (nil: from
// --kubeconfig or the default loading rules).
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer, c client.Reader) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, reportUsage); fs.PrintDefaults() }
	namespace := fs.String("namespace", "", "the campaign's namespace (default: the kubeconfig context's, else default)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	artifacts := fs.String("artifacts", "", "read trials from this artifacts directory instead of a cluster")
	htmlFile := fs.String("html", "", "write the HTML report to this file (and aggregate.json beside it)")
	aggFile := fs.String("aggregate", "", "write aggregate.json here (default: beside --html)")
	k := fs.Int("k", 0, "the k of pass^k (default: the campaign's trialsPerTask, or the most trials of a task x agent)")
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if *k < 0 {
		return fmt.Errorf("report: --k must be >= 1, got %d", *k)
	}
	var rep *report.Report
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
		rep, err = report.FromKubeconfig(ctx, c, *kubeconfig, *namespace, positional[0])
	case len(positional) > 1:
		return fmt.Errorf("report: one campaign at a time, got %q", positional)
	default:
		fmt.Fprintln(stderr, reportUsage)
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
