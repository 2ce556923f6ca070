package pack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"

	"k8s.io/apimachinery/pkg/util/validation"

	"tolokaforge.io/operator/api/runnerpb"
)

// Main runs `tolokaforge pack import|validate DIR...`.
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stdout, os.Stderr, "")
}

// ExitError carries a process exit code (1: a task failed validation).
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }
func (e *ExitError) ExitCode() int { return e.Code }

const usage = `usage:
  tolokaforge pack import DIR... [--namespace NS] [--label KEY=VALUE]... [--mcp-command SCRIPT=ARGV]... [--inline-limit BYTES]
      Convert Tolokaforge native task directories to Task manifests (and
      ConfigMaps for initial states kept out of line), written to stdout as
      one YAML stream for kubectl apply -f -. Keys that cannot be mapped are
      reported on stderr with their path.
  tolokaforge pack validate DIR... [--strict] [--artifacts DIR] [--mcp-command SCRIPT=ARGV]...
      Run each task's golden path with the oracle agent on a local runner and
      DB service. A task fails unless the oracle's trial is graded and the
      state checks (what a golden replay decides) score 1.0; --strict also
      requires the whole grade to be 1.0.`

// run is Main with its outputs and the runner's executable injectable.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, selfExe string) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return errors.New("pack: a subcommand is required: import or validate")
	}
	switch args[0] {
	case "import":
		return runImport(args[1:], stdout, stderr)
	case "validate":
		return runValidate(ctx, args[1:], stdout, stderr, selfExe)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	fmt.Fprintln(stderr, usage)
	return fmt.Errorf("pack: unknown subcommand %q (want import or validate)", args[0])
}

// multiFlag collects a repeated KEY=VALUE flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type common struct {
	mcp multiFlag
}

func (c *common) commands() (map[string][]string, error) {
	out := map[string][]string{}
	for _, v := range c.mcp {
		script, argv, ok := ParseMCPCommand(v)
		if !ok {
			return nil, fmt.Errorf("--mcp-command %q: want SCRIPT=ARGV, e.g. mcp_server.py=\"tolokaforge mcp shop\"", v)
		}
		out[script] = argv
	}
	return out, nil
}

// parseInterleaved parses flags that may follow the directories.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return dirs, nil
		}
		dirs = append(dirs, args[0])
		args = args[1:]
	}
}

func runImport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pack import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	var labels multiFlag
	ns := fs.String("namespace", "", "namespace of the manifests (default: kubectl's)")
	limit := fs.Int("inline-limit", DefaultInlineLimit, "largest initial state kept inline in the Task, in bytes of compact JSON")
	fs.Var(&labels, "label", "KEY=VALUE label on every Task (repeatable), e.g. suite=shop for a Campaign's selector")
	fs.Var(&c.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return fmt.Errorf("pack import: %w", err)
	}
	if len(dirs) == 0 {
		return errors.New("pack import: name at least one task directory")
	}
	cmds, err := c.commands()
	if err != nil {
		return fmt.Errorf("pack import: %w", err)
	}
	opts := Options{Namespace: *ns, MCPCommands: cmds, InlineLimit: *limit, Labels: map[string]string{}}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("pack import: --label %q: want KEY=VALUE", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("pack import: --label %q: key: %s", l, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("pack import: --label %q: value: %s", l, strings.Join(errs, "; "))
		}
		opts.Labels[k] = v
	}
	var (
		ms    []*Manifests
		errs  []error
		names = map[string]string{}
	)
	for _, dir := range dirs {
		conv, err := Convert(dir, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range conv.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		if prev, dup := names[conv.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: Task name %q is also %s's", dir, conv.Name, prev))
			continue
		}
		names[conv.Name] = dir
		m, err := Build(conv, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms = append(ms, m)
	}
	if len(errs) > 0 {
		// Nothing is written: a partial stream applied by kubectl would
		// leave a half-imported pack behind.
		return fmt.Errorf("pack import: %w", errors.Join(errs...))
	}
	return WriteStream(stdout, ms)
}

// Verdict is one task's validation result.
type Verdict struct {
	Dir, TaskID string
	Pass        bool
	// Score is the grade's score, StateScore the state checks' (nil when
	// the task has none or the trial was not graded).
	Score      float64
	StateScore *float64
	Outcome    string
	Why        string
}

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer, selfExe string) error {
	fs := flag.NewFlagSet("pack validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	strict := fs.Bool("strict", false, "require the whole grade to be 1.0, not only the state checks")
	artifacts := fs.String("artifacts", "", "write each trial's artifacts (trials/<task_id>/0/...) under this directory")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound of one task's trial")
	fs.Var(&c.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
	if len(dirs) == 0 {
		return errors.New("pack validate: name at least one task directory")
	}
	cmds, err := c.commands()
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
	l, err := StartLocal(ctx, LocalOptions{SelfExecutable: selfExe, ArtifactsDir: *artifacts, TrialTimeout: *timeout})
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
	defer l.Close()
	failed := 0
	for _, dir := range dirs {
		v := ValidateDir(ctx, l, dir, Options{MCPCommands: cmds}, *strict, stderr)
		status := "PASS"
		if !v.Pass {
			status = "FAIL"
			failed++
		}
		state := "n/a"
		if v.StateScore != nil {
			state = fmt.Sprintf("%.4g", *v.StateScore)
		}
		fmt.Fprintf(stdout, "%s %s (%s): state checks %s, score %.4g, %s\n", status, v.TaskID, v.Dir, state, v.Score, v.Why)
	}
	if failed > 0 {
		return &ExitError{Code: 1, Msg: fmt.Sprintf("%d of %d tasks failed validation", failed, len(dirs))}
	}
	return nil
}

// ValidateDir converts dir and runs its golden path with the oracle on l.
// Diagnostics go to diag.
func ValidateDir(ctx context.Context, l *Local, dir string, opts Options, strict bool, diag io.Writer) Verdict {
	v := Verdict{Dir: dir, TaskID: "?"}
	conv, err := Convert(dir, opts)
	if err != nil {
		v.Why = err.Error()
		return v
	}
	v.TaskID = conv.Description.TaskID
	for _, d := range conv.Diagnostics {
		fmt.Fprintln(diag, d.String())
	}
	maxTurns := 0
	if conv.MaxTurns != nil {
		maxTurns = int(*conv.MaxTurns)
	}
	res := l.RunOracle(ctx, conv.Description, conv.InitialUserMessage, maxTurns, 0)
	return judge(v, res.Outcome, res.Reason, res.Message, res.Grade, strict)
}

// judge decides a task's verdict from its oracle trial. A golden replay
// proves the state checks; transcript and judge components are reported
// but only --strict requires them.
func judge(v Verdict, outcome evalv1.AttemptOutcome, reason, message string, g *runnerpb.Grade, strict bool) Verdict {
	v.Outcome = string(outcome)
	if (outcome != evalv1.OutcomePassed && outcome != evalv1.OutcomeFailed) || g == nil {
		v.Why = fmt.Sprintf("the oracle's trial ended %s (%s): %s", outcome, reason, message)
		return v
	}
	v.Score = g.GetScore()
	if c := g.GetComponents(); c != nil && c.GetStateChecks() >= 0 {
		s := c.GetStateChecks()
		v.StateScore = &s
	}
	switch {
	case v.StateScore == nil:
		v.Why = "the golden path decides nothing: the task has no state checks to replay it against; reasons: " + g.GetReasons()
	case *v.StateScore != 1:
		v.Why = "the golden path does not reach the expected state: " + g.GetReasons()
	case strict && v.Score != 1:
		v.Why = "--strict: the grade is below 1.0: " + g.GetReasons()
	default:
		v.Pass = true
		v.Why = "golden path verified"
		if v.Score != 1 {
			v.Why += "; components a golden replay cannot exercise (transcript, judge) scored below 1: " + notStateReasons(g.GetReasons())
		}
	}
	return v
}

// notStateReasons keeps the reasons that are not the state checks'.
func notStateReasons(reasons string) string {
	var keep []string
	for _, r := range strings.Split(reasons, " | ") {
		if !strings.HasPrefix(r, "State:") && !strings.HasPrefix(r, "JSONPath:") {
			keep = append(keep, r)
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, " | ")
}
