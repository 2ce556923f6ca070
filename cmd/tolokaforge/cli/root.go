package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/runner/proc"
)

// Main runs the binary: args is os.Args (args[0] names the binary; as
// kubectl-tolokaforge it is a kubectl plugin and says so in its help), and
// the returned value is the process's exit status. version is the release
// version stamped into package main.
func Main(version string, args []string) int {
	if len(args) > 1 && args[1] == "runner" {
		// Before anything else: tools can read the runner's initial
		// environment (/proc/1/environ in a pod), so it holds nothing the
		// runner does not need. Only here, in the binary's own process.
		if err := proc.ScrubEnvironment(); err != nil {
			fmt.Fprintln(os.Stderr, "tolokaforge runner:", err)
			return 1
		}
	}
	d := &deps{stdout: os.Stdout, stderr: os.Stderr, version: version}
	if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "kubectl-") {
		d.displayName = "kubectl " + strings.TrimPrefix(filepath.Base(args[0]), "kubectl-")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	return execute(ctx, d, rest)
}

// deps is what the commands write to and may reach; tests fill in their
// own. Zero fields get the process's (os.Stdout, os.Executable(), a client
// from the kubeconfig flags, ...).
type deps struct {
	stdout, stderr io.Writer
	version        string
	// displayName is how the help names the binary (default tolokaforge;
	// "kubectl tolokaforge" as a kubectl plugin).
	displayName string
	// selfExe resolves "tolokaforge" in MCP commands (default
	// os.Executable()).
	selfExe string
	// trial and regrade are the environments of `trial run` and
	// `regrade` (their Stdout and Stderr default to stdout and stderr).
	trial   trialEnv
	regrade regradeEnv
	// cluster, when set, is the client of `results pull` and `report
	// CAMPAIGN` instead of one from the kubeconfig flags.
	cluster client.Reader
	// serveShop serves `mcp shop` (default shop.Main).
	serveShop func(context.Context, shop.Options) error
}

// defaultVersion is the version of a binary whose main did not give one
// (the tests').
const defaultVersion = "v0.0.0-dev"

// run is the binary's command line with its outputs injectable: it returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return execute(context.Background(), &deps{stdout: stdout, stderr: stderr, version: defaultVersion}, args)
}

// exitError ends a command with a chosen exit status: a trial or a pack
// that ran and did not pass exits 1, unlike a command that could not run.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

// execute runs args (without the binary's name) on the command tree and
// maps the outcome to an exit status: 0 done (help included), 2 an unknown
// command, the command's own code for an *exitError, else 1, the error
// printed as "tolokaforge COMMAND: message".
func execute(ctx context.Context, d *deps, args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	root := newRootCommand(d)
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && !strings.HasPrefix(args[0], "__complete") {
		if c, _, err := root.Find(args); err != nil || c == root {
			fmt.Fprintf(d.stderr, "tolokaforge: unknown command %q\n", args[0])
			root.SetOut(d.stderr)
			_ = root.Usage()
			return 2
		}
	}
	err := executeCommand(ctx, root, args)
	if err == nil {
		return 0
	}
	name := "tolokaforge"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name += " " + args[0]
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintf(d.stderr, "%s: %s\n", name, msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintf(d.stderr, "%s: %v\n", name, err)
	return 1
}

// executeCommand runs args on root (a tree from newRootCommand) and returns
// the command's error. A flag written with one dash (-task X, as the flag
// package took it) is read as its two-dash form.
func executeCommand(ctx context.Context, root *cobra.Command, args []string) error {
	root.SetArgs(longFlags(root, args))
	return root.ExecuteContext(ctx)
}

// longFlags rewrites "-name" and "-name=value" to "--name..." when name is a
// long flag of the command args select (the flag package's spelling, which
// pflag would read as shorthands).
func longFlags(root *cobra.Command, args []string) []string {
	c, _, err := root.Find(args)
	if err != nil || c.DisableFlagParsing {
		return args
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && (c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil) {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// newRootCommand is the whole command tree, writing to d's outputs.
func newRootCommand(d *deps) *cobra.Command {
	if d.stdout == nil {
		d.stdout = io.Discard
	}
	if d.stderr == nil {
		d.stderr = io.Discard
	}
	if d.version == "" {
		d.version = defaultVersion
	}
	root := &cobra.Command{
		Use:   "tolokaforge",
		Short: "Run LLM-agent benchmark trials on Kubernetes, or locally",
		Long: `tolokaforge is the one binary of the Tolokaforge trial operator: the manager
(operator and host), the runner, the DB service, local trials, pack tools,
reports and a local development cluster, chosen by subcommand.

Installed as kubectl-tolokaforge on the PATH it is also a kubectl plugin:
kubectl tolokaforge version.`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
	}
	if d.displayName != "" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: d.displayName}
	}
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(
		newManagerCommand(d),
		newRunnerCommand(d),
		newDBServiceCommand(d),
		newMCPCommand(d),
		newTrialCommand(d),
		newPackCommand(d),
		newDevCommand(d),
		newReportCommand(d),
		newRegradeCommand(d),
		newResultsCommand(d),
		newVersionCommand(d),
	)
	// Added now rather than at Execute, so that execute finds them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// flagError names the subcommand a flag error belongs to, as in
// "trial run: unknown flag: --tsk".
func flagError(c *cobra.Command, err error) error {
	if !c.HasParent() {
		return err // execute names the binary
	}
	return fmt.Errorf("%s: %w", commandName(c), err)
}

// commandName is c's path without the binary's name ("pack import").
func commandName(c *cobra.Command) string {
	var names []string
	for ; c.HasParent(); c = c.Parent() {
		names = append([]string{c.Name()}, names...)
	}
	if len(names) == 0 {
		return c.Name()
	}
	return strings.Join(names, " ")
}

// parseCommand parses args onto c's flags and checks its positional
// arguments, without running it.
func parseCommand(c *cobra.Command, args []string) error {
	if err := c.ParseFlags(args); err != nil {
		return flagError(c, err)
	}
	if c.Args != nil {
		return c.Args(c, c.Flags().Args())
	}
	return nil
}

// noArgs refuses positional arguments, as "NAME: unexpected arguments [...]".
func noArgs(c *cobra.Command, args []string) error {
	return noArgsNamed(commandName(c), args)
}

func noArgsNamed(name string, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", name, args)
	}
	return nil
}

// groupCommand is a command that only holds subcommands: run alone, or
// with an unknown subcommand, it prints its usage to stderr and fails with
// fail's error.
func groupCommand(use, short string, fail func(args []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			c.SetOut(c.ErrOrStderr())
			_ = c.Usage()
			return fail(args)
		},
	}
}
