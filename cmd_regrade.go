package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/results/local"
)

const regradeUsage = `usage:
  tolokaforge regrade --artifacts DIR --task PATH [--grading FILE] [--components all|LIST]

Replays the recorded tool calls of every trial of the task under DIR (as
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

// regradeMain runs `tolokaforge regrade`.
func regradeMain(ctx context.Context, args []string) error {
	return runRegrade(ctx, args, regradeEnv{Stdout: os.Stdout, Stderr: os.Stderr})
}

func runRegrade(ctx context.Context, args []string, env regradeEnv) error {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	fs := flag.NewFlagSet("regrade", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() { fmt.Fprintln(env.Stderr, regradeUsage); fs.PrintDefaults() }
	dir := fs.String("artifacts", "", "artifacts directory of the trials to regrade (required)")
	taskPath := fs.String("task", "", "the trials' task: TaskDescription JSON or Task manifest (required)")
	gradingFile := fs.String("grading", "", "grading config (the task's grading block, YAML or JSON) to grade with instead of the task's")
	components := fs.String("components", "", "all, or a comma-separated list of "+strings.Join(task.ComponentNames(), ", ")+" (default: what each original grade evaluated)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("regrade: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("regrade: unexpected arguments %q", fs.Args())
	case *dir == "":
		return errors.New("regrade: --artifacts DIR is required")
	case *taskPath == "":
		return errors.New("regrade: --task PATH is required (the artifacts do not carry the task)")
	}
	if st, err := os.Stat(*dir); err != nil {
		return fmt.Errorf("regrade: --artifacts: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("regrade: --artifacts %s: not a directory", *dir)
	}
	lt, err := local.LoadTask(*taskPath)
	if err != nil {
		return fmt.Errorf("regrade: %w", err)
	}
	opts := local.RegradeOptions{ArtifactsDir: *dir, Task: lt.Task, Log: env.Log,
		Stack: local.StackConfig{SelfExecutable: env.SelfExecutable, Log: env.Log}}
	if *gradingFile != "" {
		g, err := local.LoadGradingFile(*gradingFile)
		if err != nil {
			return fmt.Errorf("regrade: %w", err)
		}
		opts.Grading, opts.GradingSource = g, *gradingFile
	}
	switch c := strings.TrimSpace(*components); c {
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
	res, err := local.Regrade(ctx, opts)
	if err != nil {
		return err
	}
	for _, t := range res.Trials {
		if t.Skipped != "" {
			fmt.Fprintf(env.Stdout, "%s: skipped: %s\n", t.Trial, t.Skipped)
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
		fmt.Fprintf(env.Stdout, "%s: %s (was %s; now %s) on %s\n", t.Trial, verdict, was, now, strings.Join(t.Components, ", "))
		switch {
		case t.Regrade != nil:
			var comps []string
			for _, name := range task.ComponentNames() {
				if v, ok := t.Regrade.Components[name]; ok {
					verdict := "failed"
					if v >= 1 {
						verdict = "passed"
					}
					comps = append(comps, fmt.Sprintf("%s %.6g (%s)", name, v, verdict))
				}
			}
			if t.Regrade.JudgeStatus == "JUDGE_STATUS_ERRORED" {
				comps = append(comps, task.ComponentLLMJudge+" errored")
			}
			if len(comps) > 0 {
				fmt.Fprintf(env.Stdout, "  components: %s\n", strings.Join(comps, ", "))
			}
			fmt.Fprintf(env.Stdout, "  reasons: %s\n", t.Regrade.Reasons)
		case t.Message != "":
			fmt.Fprintf(env.Stdout, "  %s\n", t.Message)
		}
		for _, d := range t.Divergences {
			fmt.Fprintf(env.Stdout, "  replay diverged: %s\n", d)
		}
	}
	fmt.Fprintf(env.Stdout, "regrade (grading: %s) written to %s\n", res.Grading, res.Dir)
	return nil
}
