package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/llm"
	"tolokaforge.io/operator/api/result"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/controllers/host"
	"tolokaforge.io/operator/controllers/host/agents"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// trialEnv is where Run writes and what it may reach; zero fields get defaults.
type trialEnv struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// SelfExecutable resolves "tolokaforge" in MCP commands (default
	// os.Executable(): the tolokaforge binary itself).
	SelfExecutable string
	Log            logr.Logger
	// Agent options (HTTP client, retry policy) for OpenAI-compatible actors.
	AgentOptions agents.Options
}

type runFlags struct {
	taskPath      string
	agent         string
	baseURL       string
	apiKeyEnv     string
	user          string
	userBaseURL   string
	userAPIKeyEnv string
	message       string
	maxTurns      int
	out           string
	resume        string
	trialIndex    int
	timeout       time.Duration
	temperature   float64
	seed          int64
	modelConfig   string
	secretsDir    string
	python        string
	models        *modelFile
	allowLossy    bool
	trace         bool
	mcp           multiFlag
	mcpCommands   map[string][]string
	// userSet: --user was given, so a scripted user is chosen on purpose.
	userSet bool
}

// modelFile is --model-config: whole model configs in the TrialSpec's own
// keys (api/task.ModelConfig, strictly decoded), for the fields the flags do
// not reach (max_completion_tokens, reasoning_effort, extra_body,
// extra_headers_env, request_timeout_seconds, rate_limit, pricing). A role
// present in the file is configured by the file alone; --agent/--user and
// the flags that shape them apply to the roles it leaves out. "judge" is the
// model of the task's llm_judge (TrialSpec.judge), run by the in-process runner:
// its api_key_env names a key file in --secrets-dir, never an environment
// variable, as in the runner pod.
type modelFile struct {
	Agent              *task.ModelConfig `json:"agent,omitempty"`
	UserSimulatorModel *task.ModelConfig `json:"user_simulator_model,omitempty"`
	Judge              *task.ModelConfig `json:"judge,omitempty"`
}

func loadModelFile(path string) (*modelFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--model-config: %w", err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("--model-config %s: %w", path, err)
	}
	var mf modelFile
	if err := task.DecodeStrict(js, &mf); err != nil {
		return nil, fmt.Errorf("--model-config %s: %w", path, err)
	}
	if mf.Agent != nil {
		if err := mf.Agent.Validate("agent"); err != nil {
			return nil, fmt.Errorf("--model-config %s: %w", path, err)
		}
	}
	if u := mf.UserSimulatorModel; u != nil {
		if err := u.Validate("user_simulator_model"); err != nil {
			return nil, fmt.Errorf("--model-config %s: %w", path, err)
		}
		if u.Provider != task.ProviderOpenAI {
			return nil, fmt.Errorf("--model-config %s: user_simulator_model.provider: %q cannot play the user (want openai)", path, u.Provider)
		}
	}
	if j := mf.Judge; j != nil {
		if err := j.Validate("judge"); err != nil {
			return nil, fmt.Errorf("--model-config %s: %w", path, err)
		}
		if j.Provider != task.ProviderOpenAI {
			return nil, fmt.Errorf("--model-config %s: judge.provider: %q cannot judge (want openai)", path, j.Provider)
		}
	}
	return &mf, nil
}

const trialRunLong = `trial run runs trials on this machine: a runner and a DB service start in
this process, the agent and the user are the oracle, a scripted user or
OpenAI-compatible models, and each trial's artifacts (trajectory, grade,
metrics) are written under --out/<run-id>/trials/<task_id>/<trial_index>/.

--task is a TaskDescription JSON, a Task manifest, a task pack directory
(task.yaml, grading.yaml, ...) or a project directory: every pack under it
(tasks/<id>/task.yaml), run one after another.

It exits 0 when every trial passed, 1 when one ran and did not pass (a
failing grade, or an attempt that ended without one), and 1 with nothing run
for bad flags or a task that cannot be used.`

func newTrialCommand(d *deps) *cobra.Command {
	c := groupCommand("trial", "Run one trial locally: trial run --task PATH", func(args []string) error {
		return fmt.Errorf("trial: want subcommand \"run\", got %q", args)
	})
	c.AddCommand(newTrialRunCommand(d))
	return c
}

func newTrialRunCommand(d *deps) *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run --task FILE|PACK|PROJECT",
		Short: "Run a task's trial (or a project's) on this machine",
		Long:  trialRunLong,
		Example: `  tolokaforge trial run --task examples/shop/task.json
  tolokaforge trial run --task examples/shop/shop_orders_02 --agent openai:gpt-4o-mini --api-key-env OPENAI_API_KEY`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.check(c.Flags()); err != nil {
				return err
			}
			env := d.trial
			if env.Stdout == nil {
				env.Stdout = d.stdout
			}
			if env.Stderr == nil {
				env.Stderr = d.stderr
			}
			return runTrialFlags(c.Context(), f, env)
		},
	}
	bindRunFlags(c.Flags(), f)
	return c
}

// bindRunFlags defines trial run's flags on fs.
func bindRunFlags(fs *pflag.FlagSet, f *runFlags) {
	fs.StringVar(&f.taskPath, "task", "", "TaskDescription JSON, Task manifest, task pack directory (task.yaml, grading.yaml, ...), "+
		"or project directory: every pack under it (tasks/<id>/task.yaml), run one after another (required)")
	fs.StringVar(&f.agent, "agent", "oracle", "oracle, or openai:MODEL")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible base URL (default "+agents.DefaultBaseURL+")")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "", "environment variable holding the API key (none: send no key)")
	fs.StringVar(&f.user, "user", "scripted", "scripted, or openai:MODEL (a task whose user_simulator.mode is llm, run by a model agent, needs a user model or --user scripted given by name)")
	fs.StringVar(&f.userBaseURL, "user-base-url", "", "base URL of the user model (default --base-url)")
	fs.StringVar(&f.userAPIKeyEnv, "user-api-key-env", "", "API key variable of the user model (default --api-key-env)")
	fs.StringVar(&f.message, "message", "", "the user's opening message (default the manifest's initialUserMessage or the pack's initial_user_message, else the task description)")
	fs.IntVar(&f.maxTurns, "max-turns", 0, "agent turn budget (default the manifest's maxTurns or the pack's max_turns, else 30)")
	fs.StringVar(&f.out, "out", "results", "results directory: each run writes <out>/<run-id>/trials/<task_id>/<trial_index>/ and prints its run id")
	fs.StringVar(&f.resume, "resume", "", "continue run RUNID under --out: a trial with a recorded result (any outcome but InfraFailed) is skipped, any other is run again as its next attempt")
	fs.IntVar(&f.trialIndex, "trial-index", 0, "trial index (the k of pass^k)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "trial wall clock")
	fs.Float64Var(&f.temperature, "temperature", -1, "sampling temperature of the models (default: the provider's)")
	fs.Int64Var(&f.seed, "seed", -1, "sampling seed of the models (default: none)")
	fs.StringVar(&f.modelConfig, "model-config", "", "JSON/YAML file with \"agent\" and/or \"user_simulator_model\" model configs in TrialSpec keys "+
		"(max_completion_tokens, reasoning_effort, extra_body, extra_headers_env, request_timeout_seconds, rate_limit, pricing, ...); overrides --agent/--user for the roles it sets; "+
		"\"judge\" configures the task's llm_judge")
	fs.StringVar(&f.secretsDir, "secrets-dir", "", "directory of the judge's key file: the judge config's api_key_env names a file in it (the runner's --secrets-dir; default the runner's)")
	fs.Var(&f.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of a pack's MCP server script SCRIPT with ARGV (repeatable; as pack import)")
	fs.StringVar(&f.python, "python", "", pythonFlagHelp)
	fs.BoolVar(&f.allowLossy, "allow-lossy", false, "run a pack even when its grading keys cannot all be carried over (they are listed on stderr either way)")
	fs.BoolVar(&f.trace, "trace", false, "trace each attempt (its turns, model and tool calls, the runner's RPCs and grading components) and write the trace as OTLP JSON to "+
		traceFile+" beside trajectory.yaml, whose trace_id names it")
}

// check validates the parsed flags of fs and loads the files they name.
func (f *runFlags) check(fs *pflag.FlagSet) error {
	f.userSet = fs.Changed("user")
	switch {
	case f.taskPath == "":
		return errors.New("trial run: --task is required")
	case f.maxTurns < 0:
		return fmt.Errorf("trial run: --max-turns must be >= 0, got %d", f.maxTurns)
	case f.trialIndex < 0:
		return fmt.Errorf("trial run: --trial-index must be >= 0, got %d", f.trialIndex)
	case f.timeout <= 0:
		return fmt.Errorf("trial run: --timeout must be positive, got %s", f.timeout)
	case f.temperature != -1 && (f.temperature < 0 || f.temperature > 2):
		return fmt.Errorf("trial run: --temperature must be in [0, 2], got %g", f.temperature)
	}
	if _, err := modelConfig("--agent", f.agent, true, f); err != nil {
		return err
	}
	if _, err := modelConfig("--user", f.user, false, f); err != nil {
		return err
	}
	cmds, err := (&common{mcp: f.mcp}).commands()
	if err != nil {
		return fmt.Errorf("trial run: %w", err)
	}
	f.mcpCommands = cmds
	if f.modelConfig != "" {
		mf, err := loadModelFile(f.modelConfig)
		if err != nil {
			return fmt.Errorf("trial run: %w", err)
		}
		f.models = mf
	}
	if f.secretsDir != "" {
		if st, err := os.Stat(f.secretsDir); err != nil {
			return fmt.Errorf("trial run: --secrets-dir: %w", err)
		} else if !st.IsDir() {
			return fmt.Errorf("trial run: --secrets-dir %s: not a directory", f.secretsDir)
		}
	}
	return nil
}

// modelConfig reads --agent / --user: "oracle" (agent only), "scripted"
// (user only: nil config) or "openai:MODEL".
func modelConfig(flagName, v string, agent bool, f *runFlags) (*task.ModelConfig, error) {
	switch {
	case agent && v == "oracle":
		return &task.ModelConfig{Provider: task.ProviderOracle}, nil
	case !agent && v == "scripted":
		return nil, nil
	case strings.HasPrefix(v, "openai:") && strings.TrimSpace(strings.TrimPrefix(v, "openai:")) != "":
		mc := &task.ModelConfig{Provider: task.ProviderOpenAI, Model: strings.TrimPrefix(v, "openai:"),
			BaseURL: f.baseURL, APIKeyEnv: f.apiKeyEnv}
		if !agent {
			if f.userBaseURL != "" {
				mc.BaseURL = f.userBaseURL
			}
			if f.userAPIKeyEnv != "" {
				mc.APIKeyEnv = f.userAPIKeyEnv
			}
		}
		if f.temperature != -1 {
			t := f.temperature
			mc.Temperature = &t
		}
		if f.seed != -1 {
			s := f.seed
			mc.Seed = &s
		}
		return mc, nil
	}
	want := "scripted or openai:MODEL"
	if agent {
		want = "oracle or openai:MODEL"
	}
	return nil, fmt.Errorf("trial run: %s %q: want %s", flagName, v, want)
}

// runTrial runs `tolokaforge trial ARGS...` (args start at "run") with
// env's outputs and environment, and returns the command's error.
func runTrial(ctx context.Context, args []string, env trialEnv) error {
	d := &deps{stdout: env.Stdout, stderr: env.Stderr, trial: env}
	return executeCommand(ctx, newRootCommand(d), append([]string{"trial"}, args...))
}

// runTrialFlags is trial run with its flags checked: load the tasks,
// prepare every trial (nothing is written or started until all are ready),
// open the run, start the stack, drive each attempt and print its result,
// then, for a project, the summary.
func runTrialFlags(ctx context.Context, f *runFlags, env trialEnv) error {
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	tasks, project, err := loadTrialTasks(f, env.Stderr)
	if err != nil {
		return err
	}
	var run *runDir
	if f.resume != "" {
		if run, err = resumeRunDir(f.out, f.resume); err != nil {
			return err
		}
	}
	m := resolveModels(f)
	prepared, err := prepareTrials(f, env, m, run, tasks)
	if err != nil {
		return err
	}
	if !project && prepared[0].recorded != nil {
		return printRecorded(env.Stdout, run, prepared[0])
	}
	var store *blobstore.Store
	var stack *local.Stack
	var tracer *runTracer
	if toRun(prepared) > 0 {
		if run == nil {
			if run, err = newRunDir(f.out, time.Now().UTC()); err != nil {
				return err
			}
		}
		if store, err = openStore(ctx, run, env.Stdout); err != nil {
			return err
		}
		defer store.Close()
		if f.trace {
			if tracer, err = newRunTracer(ctx); err != nil {
				return fmt.Errorf("trial run: --trace: %w", err)
			}
			defer tracer.stop(env.Log)
		}
		if stack, err = local.StartStack(ctx, local.StackConfig{SelfExecutable: env.SelfExecutable, SecretsDir: f.secretsDir, Python: f.python, Log: env.Log,
			TracerProvider: tracer.provider()}); err != nil {
			return fmt.Errorf("trial run: %w", err)
		}
		for _, w := range stack.Warnings {
			fmt.Fprintln(env.Stderr, "tolokaforge trial run: warning:", w)
		}
		defer func() {
			if err := stack.Stop(); err != nil {
				env.Log.Error(err, "stopping the local runner and DB service")
			}
		}()
	}
	if !project {
		prepared[0].spec.RunID = run.ID
		return reportResult(env.Stdout, m, prepared[0], driveAttempt(ctx, env, f, m, stack, store, tracer, prepared[0]))
	}
	return printSummary(env.Stdout, run, driveProject(ctx, env, f, m, run, stack, store, tracer, prepared))
}

// driveProject runs a project's trials one after another and returns a
// summary line each. A canceled context leaves the rest not run (a resume
// runs them).
func driveProject(ctx context.Context, env trialEnv, f *runFlags, m trialModels, run *runDir, stack *local.Stack,
	store *blobstore.Store, tracer *runTracer, prepared []*preparedTrial) []trialSummary {
	lines := make([]trialSummary, 0, len(prepared))
	for i, p := range prepared {
		line := trialSummary{taskID: p.lt.Task.TaskID, path: p.path}
		fmt.Fprintf(env.Stdout, "\n== task %d of %d: %s (%s)\n", i+1, len(prepared), line.taskID, p.path)
		switch {
		case p.recorded != nil:
			_ = printRecorded(env.Stdout, run, p)
			line.outcome, line.pass, line.score, line.recorded = p.recorded.Outcome, p.recorded.Pass, p.recorded.Score, true
		case ctx.Err() != nil:
			fmt.Fprintf(env.Stdout, "not run: %v\n", ctx.Err())
			line.outcome = "not run"
		default:
			p.spec.RunID = run.ID
			res := driveAttempt(ctx, env, f, m, stack, store, tracer, p)
			// The summary's verdict is the one a single trial run exits with:
			// an oracle is judged as pack validate judges it, not by its grade alone.
			verdict := reportResult(env.Stdout, m, p, res)
			line.outcome = string(res.Outcome)
			if g := res.Grade; g != nil {
				score := g.GetScore()
				line.score, line.pass = &score, verdict == nil
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// trialTask is one task of --task and the file or pack directory it came
// from.
type trialTask struct {
	path string
	lt   *local.LoadedTask
}

// loadTrialTasks reads --task: a file (TaskDescription JSON or Task
// manifest) or a task pack directory is one task; any other directory is a
// project, every pack under it a task (project is then true). Every pack is
// converted before anything runs, and any that cannot be, a task_id two
// packs share, or (without --allow-lossy) a grading key the conversion drops
// refuses the whole run.
func loadTrialTasks(f *runFlags, stderr io.Writer) ([]trialTask, bool, error) {
	if st, err := os.Stat(f.taskPath); err != nil || !st.IsDir() {
		lt, err := local.LoadTask(f.taskPath)
		if err != nil {
			if filepath.Base(f.taskPath) == local.PackTaskFile {
				return nil, false, fmt.Errorf("trial run: %w (if it is a task pack's %s, pass the pack's directory: --task %s)",
					err, local.PackTaskFile, filepath.Dir(f.taskPath))
			}
			return nil, false, fmt.Errorf("trial run: %w", err)
		}
		if err := local.CheckLocal(lt.Task); err != nil {
			return nil, false, fmt.Errorf("trial run: %w", err)
		}
		return []trialTask{{path: f.taskPath, lt: lt}}, false, nil
	}
	dirs, err := local.FindPacks(f.taskPath)
	if err != nil {
		return nil, false, fmt.Errorf("trial run: %w", err)
	}
	opts := pack.Options{Builtins: builtin.Catalog{}, MCPCommands: f.mcpCommands, Describe: local.Describer(f.python)}
	var (
		tasks   []trialTask
		errs    []string
		dropped int
		seen    = map[string]string{}
	)
	for _, dir := range dirs {
		lt, diags, err := local.LoadPack(dir, opts)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, d := range diags {
			fmt.Fprintln(stderr, d.String())
			if d.DropsGrading() {
				dropped++
			}
		}
		if err := local.CheckLocal(lt.Task); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		id := lt.Task.TaskID
		if prev, dup := seen[id]; dup {
			errs = append(errs, fmt.Sprintf("task pack %s: task_id %q is also %s's (their trials would share one directory of the run)", dir, id, prev))
			continue
		}
		seen[id] = dir
		tasks = append(tasks, trialTask{path: dir, lt: lt})
	}
	switch {
	case len(errs) == 1 && len(dirs) == 1:
		return nil, false, fmt.Errorf("trial run: %s", errs[0])
	case len(errs) > 0:
		return nil, false, fmt.Errorf("trial run: %d of %d task packs under %s refused, nothing run:\n  %s", len(errs), len(dirs), f.taskPath, strings.Join(errs, "\n  "))
	}
	if dropped > 0 && !f.allowLossy {
		// A trial graded on less than its pack's author wrote reports a score
		// nobody asked for; refused before any token, as pack import refuses.
		return nil, false, fmt.Errorf("trial run: %d grading key(s) of %s would be dropped (listed above); nothing run; --allow-lossy runs without them", dropped, f.taskPath)
	}
	return tasks, len(dirs) > 1 || dirs[0] != f.taskPath, nil
}

// prepareTrials prepares every task's trial. A single task's refusal is
// returned as it is; a project's are all returned together, each naming its
// pack, so one pass fixes them.
func prepareTrials(f *runFlags, env trialEnv, m trialModels, run *runDir, tasks []trialTask) ([]*preparedTrial, error) {
	out := make([]*preparedTrial, 0, len(tasks))
	var refused []string
	for _, t := range tasks {
		// The time is read per trial: it makes each attempt id its own.
		p, err := prepareTrial(f, env, m, run, t.lt, time.Now().UTC())
		if err != nil {
			if len(tasks) == 1 {
				return nil, err
			}
			refused = append(refused, t.path+": "+strings.TrimPrefix(err.Error(), "trial run: "))
			continue
		}
		p.path = t.path
		out = append(out, p)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("trial run: %d of %d tasks refused, nothing run:\n  %s", len(refused), len(tasks), strings.Join(refused, "\n  "))
	}
	return out, nil
}

// toRun counts the trials a resume does not skip.
func toRun(prepared []*preparedTrial) int {
	n := 0
	for _, p := range prepared {
		if p.recorded == nil {
			n++
		}
	}
	return n
}

// trialModels are the run's model configs: the flags', each role the
// --model-config file sets replaced by the file's.
type trialModels struct {
	agent, user, judge  *task.ModelConfig
	agentName, userName string
}

// resolveModels reads the models from flags parseRunFlags has checked.
func resolveModels(f *runFlags) trialModels {
	m := trialModels{agentName: f.agent, userName: f.user}
	m.agent, _ = modelConfig("--agent", f.agent, true, f)
	m.user, _ = modelConfig("--user", f.user, false, f)
	if mf := f.models; mf != nil {
		m.judge = mf.Judge
		if mf.Agent != nil {
			m.agent, m.agentName = mf.Agent, describe(mf.Agent)
		}
		if mf.UserSimulatorModel != nil {
			m.user, m.userName = mf.UserSimulatorModel, describe(mf.UserSimulatorModel)
		}
	}
	return m
}

// preparedTrial is one trial ready to drive: its spec and actors are built,
// so whatever would refuse it has refused it before anything ran.
type preparedTrial struct {
	// path is the task's file or pack directory.
	path        string
	lt          *local.LoadedTask
	spec        *task.TrialSpec
	agent, user host.Actor
	opening     string
	maxTurns    int
	// index is the trial index (the k of pass^k), attempt the attempt's
	// number in it.
	index, attempt int
	// recorded is set when a resumed run already has the trial's result:
	// it is skipped.
	recorded *recordedTrial
}

// prepareTrial builds the trial of lt: its attempt number (the next one
// when resuming run), its spec and its actors. A judged task without a
// judge model is refused here, before any token is spent.
func prepareTrial(f *runFlags, env trialEnv, m trialModels, run *runDir, lt *local.LoadedTask, now time.Time) (*preparedTrial, error) {
	p := &preparedTrial{lt: lt, index: f.trialIndex, attempt: 1}
	if run != nil {
		rec, err := readRecorded(run, lt.Task.TaskID, f.trialIndex)
		if err != nil {
			return nil, err
		}
		if rec.Done() {
			p.recorded = &rec
			return p, nil
		}
		p.attempt = rec.LastAttempt + 1
	}
	// The explicit opening line (flag, else the manifest's) is said verbatim
	// by either kind of user. A bare TaskDescription carries none (protocol
	// v2 moved it to the host): an LLM user then opens in its own words from
	// the backstory, and the scripted user asks for the task as described
	// (host.DefaultUser).
	p.opening = f.message
	if p.opening == "" {
		p.opening = lt.InitialUserMessage
	}
	if u := lt.Task.UserSimulator; u != nil && u.Mode == task.UserSimLLM && (m.agent == nil || m.agent.Provider != task.ProviderOracle) && m.user == nil && !f.userSet {
		// Refused before any token: the task's conversation is with a simulated user,
		// and the scripted default would stand in for it without anyone asking.
		return nil, fmt.Errorf("trial run: task %s simulates its user with an LLM (user_simulator.mode llm), but no user model is given: "+
			"pass --user openai:MODEL (or user_simulator_model in --model-config) to simulate the user, or --user scripted to run it with a scripted user on purpose", lt.Task.TaskID)
	}
	if g := lt.Task.Grading; g != nil && g.LLMJudge != nil && g.GradingMethod != task.GradingTestExecution && m.judge == nil {
		// Refused before any token: the runner would refuse the registration anyway.
		return nil, fmt.Errorf("trial run: task %s grades with llm_judge (model_ref %q), which needs a judge model: "+
			"add a \"judge\" model config to --model-config (its api_key_env names a key file in --secrets-dir)", lt.Task.TaskID, g.LLMJudge.ModelRef)
	}
	p.maxTurns = f.maxTurns
	if p.maxTurns == 0 {
		p.maxTurns = lt.MaxTurns
	}
	// The run id and the DB service's URL are known once the run is open
	// and the stack is up.
	p.spec = task.NewTrialSpec(task.TrialSpecParams{
		Task:       lt.Task,
		TrialIndex: f.trialIndex,
		RunID:      "local-" + now.Format("20060102T150405Z"),
		AttemptID:  fmt.Sprintf("local-%d", now.UnixNano()),
		Agent:      m.agent,
	})
	p.spec.UserSimulatorModel, p.spec.Judge = m.user, m.judge
	opts := actorOptions(env)
	var err error
	if p.agent, err = agents.NewAgent(p.spec, opts); err != nil {
		return nil, fmt.Errorf("trial run: %w", err)
	}
	p.user = host.DefaultUser(lt.Task, p.opening)
	if m.user != nil {
		if p.user, err = agents.NewUser(p.spec, p.opening, opts); err != nil {
			return nil, fmt.Errorf("trial run: %w", err)
		}
	}
	return p, nil
}

// actorOptions are env's agent options with the run's defaults filled in.
func actorOptions(env trialEnv) agents.Options {
	opts := env.AgentOptions
	if opts.Getenv == nil {
		opts.Getenv = env.Getenv
	}
	if opts.Log.GetSink() == nil {
		opts.Log = env.Log
	}
	if opts.Limits == nil {
		// One registry for the run's actors, as the manager has one for all
		// its trials: a rate_limit shared by agent and user on one model holds.
		opts.Limits = llm.NewLimits()
	}
	return opts
}

// printRecorded reports a trial a resume skips, with the recorded verdict
// as the command's result.
func printRecorded(w io.Writer, run *runDir, p *preparedTrial) error {
	rec := p.recorded
	fmt.Fprintf(w, "run %s: trial %s:%d already has a result (outcome %s), skipped\nartifacts: %s\n",
		run.ID, p.lt.Task.TaskID, p.index, rec.Outcome, rec.Dir)
	if rec.Pass {
		return nil
	}
	return &exitError{code: 1, msg: fmt.Sprintf("trial recorded in run %s did not pass: outcome %s", run.ID, rec.Outcome)}
}

// openStore opens the run directory as the artifact store and says which
// run this is.
func openStore(ctx context.Context, run *runDir, w io.Writer) (*blobstore.Store, error) {
	fileURL, err := blobstore.FileURL(run.Dir)
	if err != nil {
		return nil, fmt.Errorf("trial run: %w", err)
	}
	store, err := blobstore.Open(ctx, fileURL)
	if err != nil {
		return nil, fmt.Errorf("trial run: %w", err)
	}
	verb := "new run"
	if run.Resumed {
		verb = "resuming run"
	}
	fmt.Fprintf(w, "%s %s in %s (continue it with --resume %s)\n", verb, run.ID, run.Dir, run.ID)
	return store, nil
}

// driveAttempt runs the prepared trial on the stack, its turns printed as
// they happen and its artifacts written to the store (its trace too when
// tracer is not nil).
func driveAttempt(ctx context.Context, env trialEnv, f *runFlags, m trialModels, stack *local.Stack, store *blobstore.Store,
	tracer *runTracer, p *preparedTrial) host.AttemptResult {
	p.spec.EnvEndpoints = &task.EnvEndpoints{DBServiceURL: stack.DBServiceURL}
	fmt.Fprintf(env.Stdout, "trial %s: agent %s, user %s, max turns %d\n", p.spec.TrialID, m.agentName, m.userName, orDefault(p.maxTurns, host.DefaultMaxTurns))
	if m.judge != nil {
		fmt.Fprintf(env.Stdout, "judge %s\n", describe(m.judge))
	}
	var components []string
	if m.agent != nil && m.agent.Provider == task.ProviderOracle {
		components = local.OracleComponents()
	}
	res := host.RunAttempt(ctx, host.AttemptConfig{
		Runner:             stack.Runner,
		Spec:               p.spec,
		InitialUserMessage: p.opening,
		MaxTurns:           p.maxTurns,
		TrialTimeout:       f.timeout,
		Agent:              p.agent,
		User:               p.user,
		ArtifactsSink:      store.Sink(""),
		Record:             result.Record{Agent: m.agentName},
		TrialIndex:         p.index,
		AttemptNumber:      p.attempt,
		Progress:           func(ev host.TurnEvent) { printTurn(env.Stdout, ev) },
		Log:                env.Log,
		GradingComponents:  components,
		TracerProvider:     tracer.provider(),
	})
	writeTrace(ctx, env, store.Sink(""), tracer, p, &res)
	return res
}

// reportResult prints res and maps it to the exit code. The oracle is judged
// as pack validate judges it: its golden path must reach the expected state
// and every configured component must grade its replay; a transcript rule the
// replay does not meet is reported, not a failure (the oracle holds no
// conversation to meet it with).
func reportResult(w io.Writer, m trialModels, p *preparedTrial, res host.AttemptResult) error {
	err := printResult(w, res)
	if m.agent == nil || m.agent.Provider != task.ProviderOracle {
		return err
	}
	v := local.OracleVerdict(p.lt.Task, res, false)
	if v.Pass {
		fmt.Fprintf(w, "oracle: %s\n", v.Why)
		return nil
	}
	fmt.Fprintf(w, "oracle: FAIL: %s\n", v.Why)
	return &exitError{code: 1, msg: "oracle: " + v.Why}
}

func describe(c *task.ModelConfig) string {
	if c.Provider == task.ProviderOracle {
		return string(c.Provider)
	}
	return string(c.Provider) + ":" + c.Model
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}
