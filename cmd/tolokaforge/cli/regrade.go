package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/results/local"
)

const regradeLong = `regrade replays the recorded tool calls of every trial of the task under DIR (as
trial run and the manager write them: trials/<task_id>/<index>/) on a fresh
DB state, through a runner and DB service started for it, and grades each
again with the task's grading config or the one in --grading (the task's
grading block, YAML or JSON). No model is called. The results go to a new
DIR/regrade-<timestamp>/ (trials/... and regrade.yaml); the originals are
never touched. By default each trial is graded on the components its
original grade evaluated; --components all grades every configured one.`

// regradeEnv is where runRegrade writes and what it may reach.
type regradeEnv struct {
	Stdout, Stderr io.Writer
	// SelfExecutable resolves "tolokaforge" in MCP commands (default
	// os.Executable()).
	SelfExecutable string
	Log            logr.Logger
	Now            func() time.Time
}

// regradeFlags are regrade's command line.
type regradeFlags struct {
	dir, taskPath, gradingFile, components string
	python                                 string
}

func newRegradeCommand(d *deps) *cobra.Command {
	c, _ := regradeCommand(d)
	return c
}

// regradeCommand is the regrade command and the flags it fills in.
func regradeCommand(d *deps) (*cobra.Command, *regradeFlags) {
	f := &regradeFlags{}
	c := &cobra.Command{
		Use:     "regrade --artifacts DIR --task PATH",
		Short:   "Grade recorded trials again by replaying their tool calls",
		Long:    regradeLong,
		Example: `  tolokaforge regrade --artifacts results/local-20260101T000000Z --task examples/shop/task.json --components all`,
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			env := d.regrade
			if env.Stdout == nil {
				env.Stdout = d.stdout
			}
			if env.Stderr == nil {
				env.Stderr = d.stderr
			}
			opts, err := regradeOptions(f, env)
			if err != nil {
				return err
			}
			res, err := local.Regrade(c.Context(), opts)
			if err != nil {
				return err
			}
			printRegrade(env.Stdout, res)
			return nil
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.dir, "artifacts", "", "artifacts directory of the trials to regrade (required)")
	fs.StringVar(&f.taskPath, "task", "", "the trials' task: TaskDescription JSON or Task manifest (required)")
	fs.StringVar(&f.gradingFile, "grading", "", "grading config (the task's grading block, YAML or JSON) to grade with instead of the task's")
	fs.StringVar(&f.components, "components", "", "all, or a comma-separated list of "+strings.Join(task.ComponentNames(), ", ")+" (default: what each original grade evaluated)")
	fs.StringVar(&f.python, "python", "", pythonFlagHelp)
	return c, f
}

// runRegrade runs `tolokaforge regrade ARGS...` in env and returns the
// command's error.
func runRegrade(ctx context.Context, args []string, env regradeEnv) error {
	d := &deps{stdout: env.Stdout, stderr: env.Stderr, regrade: env}
	return executeCommand(ctx, newRootCommand(d), append([]string{"regrade"}, args...))
}

// parseRegradeFlags reads regrade's command line without running it.
func parseRegradeFlags(args []string, stderr io.Writer) (*regradeFlags, error) {
	c, f := regradeCommand(&deps{stderr: stderr})
	if err := parseCommand(c, args); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// check refuses a command line missing what regrade needs.
func (f *regradeFlags) check() error {
	switch {
	case f.dir == "":
		return errors.New("regrade: --artifacts DIR is required")
	case f.taskPath == "":
		return errors.New("regrade: --task PATH is required (the artifacts do not carry the task)")
	}
	if st, err := os.Stat(f.dir); err != nil {
		return fmt.Errorf("regrade: --artifacts: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("regrade: --artifacts %s: not a directory", f.dir)
	}
	return nil
}

// regradeOptions loads the task and the grading file the flags name.
func regradeOptions(f *regradeFlags, env regradeEnv) (local.RegradeOptions, error) {
	lt, err := local.LoadTask(f.taskPath)
	if err != nil {
		return local.RegradeOptions{}, fmt.Errorf("regrade: %w", err)
	}
	opts := local.RegradeOptions{ArtifactsDir: f.dir, Task: lt.Task, Log: env.Log,
		Stack: local.StackConfig{SelfExecutable: env.SelfExecutable, Python: f.python, Log: env.Log}}
	if f.gradingFile != "" {
		g, err := local.LoadGradingFile(f.gradingFile)
		if err != nil {
			return opts, fmt.Errorf("regrade: %w", err)
		}
		opts.Grading, opts.GradingSource = g, f.gradingFile
	}
	switch c := strings.TrimSpace(f.components); c {
	case "":
	case "all":
		opts.AllComponents = true
	default:
		for _, name := range strings.Split(c, ",") {
			opts.Components = append(opts.Components, strings.TrimSpace(name))
		}
	}
	if env.Now != nil {
		opts.Now = env.Now()
	}
	return opts, nil
}

// printRegrade prints each trial's old and new grade and where the regrade
// was written.
func printRegrade(w io.Writer, res *local.RegradeResult) {
	for _, t := range res.Trials {
		if t.Skipped != "" {
			fmt.Fprintf(w, "%s: skipped: %s\n", t.Trial, t.Skipped)
			continue
		}
		was := "no grade"
		if o := t.Original; o != nil {
			was = fmt.Sprintf("score %g, pass %t", o.Score, o.Pass)
		}
		now := t.Outcome
		if g := t.Regrade; g != nil {
			now = fmt.Sprintf("score %g, pass %t", g.Score, g.Pass)
		}
		verdict := "unchanged"
		if t.Changed {
			verdict = "CHANGED"
		}
		fmt.Fprintf(w, "%s: %s (was %s; now %s) on %s\n", t.Trial, verdict, was, now, strings.Join(t.Components, ", "))
		switch {
		case t.Regrade != nil:
			if comps := regradedComponents(t.Regrade); len(comps) > 0 {
				fmt.Fprintf(w, "  components: %s\n", strings.Join(comps, ", "))
			}
			fmt.Fprintf(w, "  reasons: %s\n", t.Regrade.Reasons)
		case t.Message != "":
			fmt.Fprintf(w, "  %s\n", t.Message)
		}
		for _, d := range t.Divergences {
			fmt.Fprintf(w, "  replay diverged: %s\n", d)
		}
	}
	fmt.Fprintf(w, "regrade (grading: %s) written to %s\n", res.Grading, res.Dir)
}

// regradedComponents is each component's new score and verdict, in the
// spec's order.
func regradedComponents(g *local.GradeSummary) []string {
	var comps []string
	for _, name := range task.ComponentNames() {
		if v, ok := g.Components[name]; ok {
			verdict := "failed"
			if v >= 1 {
				verdict = "passed"
			}
			comps = append(comps, fmt.Sprintf("%s %.6g (%s)", name, v, verdict))
		}
	}
	if g.JudgeStatus == "JUDGE_STATUS_ERRORED" {
		comps = append(comps, task.ComponentLLMJudge+" errored")
	}
	return comps
}
