package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/results/cluster"
	"tolokaforge.io/operator/results/pull"
)

const resultsUsage = `usage:
  tolokaforge results pull CAMPAIGN|TRIAL --out DIR [--namespace NS] [--kubeconfig PATH]

Reads the Campaign (its Trials) or the Trial of that name from the cluster,
follows each Trial's status.artifactsURL and writes its artifacts to
DIR/<agent>/trials/<task_id>/<index>/ (the latest attempt on top, every
attempt under attempts/<n>/), the layout "tolokaforge report --artifacts DIR"
reads. Store credentials come from the provider's environment.`

// resultsMain runs `tolokaforge results`.
func resultsMain(ctx context.Context, args []string) error {
	return runResults(ctx, args, os.Stdout, os.Stderr, nil)
}

// runResults is resultsMain with outputs and the cluster client injectable
// (nil: from --kubeconfig or the default loading rules).
func runResults(ctx context.Context, args []string, stdout, stderr io.Writer, c client.Reader) error {
	if len(args) == 0 || args[0] != "pull" {
		fmt.Fprintln(stderr, resultsUsage)
		return fmt.Errorf("results: want subcommand \"pull\", got %q", args)
	}
	fs := flag.NewFlagSet("results pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, resultsUsage); fs.PrintDefaults() }
	namespace := fs.String("namespace", "", "namespace (default: the kubeconfig context's, else default)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	out := fs.String("out", "", "directory to write the artifacts to (required)")
	positional, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	switch {
	case len(positional) != 1:
		return fmt.Errorf("results pull: name one campaign or trial, got %q", positional)
	case *out == "":
		return errors.New("results pull: --out DIR is required")
	}
	c, ns, err := cluster.Client(c, *kubeconfig, *namespace)
	if err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	if err := pull.Pull(ctx, c, ns, positional[0], *out, stdout); err != nil {
		return fmt.Errorf("results pull: %w", err)
	}
	return nil
}
