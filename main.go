// Command tolokaforge is the one binary of the Tolokaforge trial operator: the
// manager (operator + host), the runner, the DB service, local trials, pack tools
// and a local development cluster, chosen by subcommand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"tolokaforge.io/operator/dbservice"
	"tolokaforge.io/operator/runner"
	"tolokaforge.io/operator/runner/proc"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"manager":   {"run the operator (Trial/Campaign controllers and the host)", managerMain},
		"runner":    {"serve the RunnerService (tools, grading) over gRPC", runRunner},
		"dbservice": {"serve a trial database over HTTP", dbservice.Main},
		"mcp":       {"serve a built-in example MCP server over stdio: mcp shop", runMCP},
		"trial":     {"run one trial locally: trial run --task PATH", trialMain},
		"pack":      {"convert and validate task packs: pack import|validate", packMain},
		"dev":       {devSummary, devMain},
		"report":    {"campaign results as a table, HTML page and aggregate.json", reportMain},
		"regrade":   {"grade recorded trials again by replaying their tool calls: regrade --artifacts DIR --task PATH", regradeMain},
		"results":   {"fetch a campaign's or trial's artifacts: results pull NAME --out DIR", resultsMain},
		"version":   {"print the version and the engine protocol version", runVersion},
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "runner" {
		// Before anything else: tools can read the runner's initial
		// environment (/proc/1/environ in a pod), so it holds nothing the
		// runner does not need. Only here, in the binary's own process.
		if err := proc.ScrubEnvironment(); err != nil {
			fmt.Fprintln(os.Stderr, "tolokaforge runner:", err)
			os.Exit(1)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout, cmds)
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tolokaforge: unknown command %q\n", args[0])
		usage(stderr, cmds)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmd.run(ctx, args[1:]); err != nil {
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			if msg := err.Error(); msg != "" {
				fmt.Fprintf(stderr, "tolokaforge %s: %s\n", args[0], msg)
			}
			return ec.ExitCode()
		}
		fmt.Fprintf(stderr, "tolokaforge %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// exitError ends a command with a chosen exit status: a trial or a pack
// that ran and did not pass exits 1, unlike a command that could not run.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) ExitCode() int { return e.code }

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: tolokaforge <command> [flags]\n\ncommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(w, b.String())
}

func runRunner(ctx context.Context, args []string) error {
	return runner.MainWith(ctx, args, runner.Config{Version: version})
}

// parseInterspersed parses fs's flags wherever they stand among the
// positional arguments (`results pull NAME --out DIR`, as kubectl takes
// them), which the flag package alone stops at, and returns the positionals
// in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
