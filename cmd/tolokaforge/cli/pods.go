package cli

import (
	"context"
	"flag"

	"github.com/spf13/cobra"

	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
)

// The pod commands: `runner` and `dbservice` are what the manager starts in
// a trial's pods. Their container args are the pod contract their own
// packages parse (runner.Main, dbservice.Main), so cobra passes them through
// untouched; the flags are registered here only for --help, completion and
// the generated reference.

func newRunnerCommand(d *deps) *cobra.Command {
	return passThrough(&cobra.Command{
		Use:   "runner",
		Short: "Serve the RunnerService (tools, grading) over gRPC",
		Long: `runner serves RunnerService and grpc.health.v1 on --listen until it is
stopped (SIGTERM), then drains: the process of a trial's runner pod.`,
	}, runner.FlagSet(), func(ctx context.Context, args []string) error {
		return runner.MainWith(ctx, args, runner.Config{Version: d.version})
	})
}

func newDBServiceCommand(d *deps) *cobra.Command {
	return passThrough(&cobra.Command{
		Use:   "dbservice",
		Short: "Serve a trial database over HTTP",
		Long: `dbservice serves the trial databases on --listen until it is stopped:
the process of a trial's DB service pod.`,
	}, dbservice.FlagSet(), dbservice.Main)
}

// passThrough makes c hand its arguments to main unparsed; fs, the flags
// main parses, are shown by --help.
func passThrough(c *cobra.Command, fs *flag.FlagSet, main func(context.Context, []string) error) *cobra.Command {
	c.Flags().AddGoFlagSet(fs)
	c.DisableFlagParsing = true
	c.RunE = func(c *cobra.Command, args []string) error {
		if asksHelp(args) {
			return c.Help()
		}
		return main(c.Context(), args)
	}
	return c
}

// asksHelp says whether args, which cobra does not parse, ask for help.
func asksHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" || a == "-help" {
			return true
		}
	}
	return false
}
