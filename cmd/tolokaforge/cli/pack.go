package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"k8s.io/apimachinery/pkg/util/validation"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/results/local"
	"tolokaforge.io/operator/runner/tools/builtin"
)

const packImportLong = `pack import converts Tolokaforge task directories (a project or a folder of
packs: every task.yaml under it) to Task manifests (and ConfigMaps for
initial states kept out of line), written to stdout as one YAML stream for
kubectl apply --server-side -f - (a client-side apply copies each object into
an annotation of at most 256 KiB, which a pack's Task or files ConfigMap can
exceed).

Keys that cannot be mapped are reported on stderr with their path; when a
grading key is among them nothing is written (exit 1) unless --allow-lossy.
A task's files travel as a bundle in a ConfigMap (at most 1000 KiB), or with
--store URL (the manager's --artifacts-url) in that store under
packs/sha256/<hex>.tar, uploaded before any manifest is written and only when
not already there.`

const packValidateLong = `pack validate runs each task's golden path with the oracle agent on a local
runner and DB service, graded by every component the task configures.

A task fails unless the state checks (what a golden replay decides) score 1.0
and every other configured component (transcript rules, trace checks, custom
checks, the judge) grades the oracle's transcript; --strict also requires the
whole grade to be 1.0. The judge runs against an in-process fake model
answering every criterion met (in the -tags dev build; the production build
has none), unless --model-config gives a "judge" model config (its
api_key_env names a key file in --secrets-dir).`

func newPackCommand(d *deps) *cobra.Command {
	c := groupCommand("pack", "Convert, build and validate task packs: pack import|build|validate", func(args []string) error {
		if len(args) == 0 {
			return errors.New("pack: a subcommand is required: import, build or validate")
		}
		return fmt.Errorf("pack: unknown subcommand %q (want import, build or validate)", args[0])
	})
	c.AddCommand(newPackImportCommand(d), newPackBuildCommand(d), newPackValidateCommand(d))
	return c
}

// runPack runs `tolokaforge pack ARGS...` with its outputs and the runner's
// executable injectable, and returns the command's error.
func runPack(ctx context.Context, args []string, stdout, stderr io.Writer, selfExe string) error {
	d := &deps{stdout: stdout, stderr: stderr, selfExe: selfExe}
	return executeCommand(ctx, newRootCommand(d), append([]string{"pack"}, args...))
}

// multiFlag collects a repeated KEY=VALUE flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Type is the value's name in the help ("--label KEY=VALUE").
func (m *multiFlag) Type() string { return "KEY=VALUE" }

type common struct {
	mcp multiFlag
}

func (c *common) commands() (map[string][]string, error) {
	out := map[string][]string{}
	for _, v := range c.mcp {
		script, argv, ok := pack.ParseMCPCommand(v)
		if !ok {
			return nil, fmt.Errorf("--mcp-command %q: want SCRIPT=ARGV, e.g. mcp_server.py=\"tolokaforge mcp shop\"", v)
		}
		out[script] = argv
	}
	return out, nil
}

// importFlags are pack import's command line.
type importFlags struct {
	common
	labels     multiFlag
	namespace  string
	limit      int
	allowLossy bool
	storeURL   string
}

func newPackImportCommand(d *deps) *cobra.Command {
	f := &importFlags{}
	c := &cobra.Command{
		Use:     "import DIR|PROJECT...",
		Short:   "Convert task packs to Task manifests (YAML on stdout)",
		Long:    packImportLong,
		Example: `  tolokaforge pack import examples/shop/shop_orders_02 --label suite=shop | kubectl apply --server-side -f -`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("pack import: name at least one task directory")
			}
			return nil
		},
		RunE: func(c *cobra.Command, dirs []string) error {
			return runImport(c.Context(), f, dirs, d.stdout, d.stderr)
		},
	}
	f.register(c.Flags(), "")
	return c
}

// register adds import's flags to fs (nsShort: the --namespace shorthand).
func (f *importFlags) register(fs *pflag.FlagSet, nsShort string) {
	fs.StringVarP(&f.namespace, "namespace", nsShort, "", "namespace of the manifests (default: kubectl's)")
	fs.IntVar(&f.limit, "inline-limit", pack.DefaultInlineLimit, "largest initial state kept inline in the Task, in bytes of compact JSON")
	fs.Var(&f.labels, "label", "KEY=VALUE label on every Task (repeatable), e.g. suite=shop for a Campaign's selector")
	fs.Var(&f.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	fs.BoolVar(&f.allowLossy, "allow-lossy", false, "write the manifests even when grading keys are dropped (they are listed on stderr either way)")
	fs.StringVar(&f.storeURL, "store", "", "upload each task's files bundle to this artifact store (the manager's --artifacts-url: s3://BUCKET/PREFIX[?endpoint=...] or file:///DIR) under packs/sha256/<hex>.tar and name it by url, instead of a ConfigMap (which holds at most 1000 KiB)")
}

func runImport(ctx context.Context, f *importFlags, dirs []string, stdout, stderr io.Writer) error {
	return importPacks(ctx, "pack import", f, dirs, stdout, stderr, nil)
}

// importPacks is pack import (what names its errors): every task converted
// and checked, then images (pack build's, nil for import) given every
// conversion before any manifest is rendered, then the stream written.
// Nothing is written when any step fails.
func importPacks(ctx context.Context, what string, f *importFlags, dirs []string, stdout, stderr io.Writer,
	images func(context.Context, []*pack.Converted) error) error {
	c, labels, ns, limit, allowLossy, storeURL := &f.common, f.labels, &f.namespace, &f.limit, &f.allowLossy, &f.storeURL
	var err error
	cmds, err := c.commands()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	opts := pack.Options{Builtins: builtin.Catalog{}, Namespace: *ns, MCPCommands: cmds, InlineLimit: *limit, Labels: map[string]string{}, Describe: local.Describer("")}
	var store *blobstore.Store
	if *storeURL != "" {
		if !blobstore.IsURL(*storeURL) {
			return fmt.Errorf(what+": --store %q: want s3://BUCKET/PREFIX or file:///DIR", *storeURL)
		}
		// Opening contacts nothing: an unreachable store fails at upload,
		// after every pack converted, and before anything is written.
		if store, err = blobstore.Open(ctx, *storeURL); err != nil {
			return fmt.Errorf(what+": --store: %w", err)
		}
		defer store.Close()
		opts.FilesURL = store.ObjectURL
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf(what+": --label %q: want KEY=VALUE", l)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf(what+": --label %q: key: %s", l, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf(what+": --label %q: value: %s", l, strings.Join(errs, "; "))
		}
		opts.Labels[k] = v
	}
	var (
		convs   []*pack.Converted
		errs    []error
		names   = map[string]string{}
		dropped int
	)
	var tasks []string
	for _, dir := range dirs {
		// A project (or a folder of packs) imports every task under it.
		found, err := pack.FindTasks(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tasks = append(tasks, found...)
	}
	for _, dir := range tasks {
		conv, err := pack.ConvertContext(ctx, dir, opts)
		if ctx.Err() != nil {
			// SIGTERM or ^C: stop now, write nothing, and say so rather
			// than list every remaining pack as failed.
			return fmt.Errorf("%s: canceled at %s, nothing written: %w", what, dir, ctx.Err())
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range conv.Diagnostics {
			fmt.Fprintln(stderr, d.String())
			if d.DropsGrading() {
				dropped++
			}
		}
		if prev, dup := names[conv.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: Task name %q is also %s's", dir, conv.Name, prev))
			continue
		}
		names[conv.Name] = dir
		convs = append(convs, conv)
	}
	if len(errs) > 0 {
		// Nothing is written: a partial stream applied by kubectl would
		// leave a half-imported pack behind.
		return fmt.Errorf("%s: %w", what, errors.Join(errs...))
	}
	if dropped > 0 && !*allowLossy {
		// A pack graded on less than its author wrote would report scores
		// nobody asked for; nothing is written unless the loss is accepted.
		return &exitError{code: 1, msg: fmt.Sprintf("%s: %d grading key(s) would be dropped (listed above); nothing written; --allow-lossy imports without them", what, dropped)}
	}
	if images != nil {
		if err := images(ctx, convs); err != nil {
			return fmt.Errorf("%s: %w; nothing written", what, err)
		}
	}
	var ms []*pack.Manifests
	for _, conv := range convs {
		m, err := pack.Build(conv, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms = append(ms, m)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", what, errors.Join(errs...))
	}
	if store != nil {
		// Every bundle is in the store before any Task naming it is
		// written: a Task applied from this stream never waits for its files.
		if err := pushBundles(ctx, store, ms, stderr); err != nil {
			return fmt.Errorf("%s: %w; no manifests written", what, err)
		}
	}
	return pack.WriteStream(stdout, ms)
}

// pushBundles uploads each distinct bundle of ms to store under its
// content address. An object already there with the same digest is left
// alone (re-importing uploads nothing); one with other bytes (a torn or
// tampered copy) is replaced, since no reader could use it anyway.
func pushBundles(ctx context.Context, store *blobstore.Store, ms []*pack.Manifests, stderr io.Writer) error {
	done := map[string]bool{}
	for _, m := range ms {
		if m.Bundle == nil || done[m.BundleKey] {
			continue
		}
		done[m.BundleKey] = true
		where := store.ObjectURL(m.BundleKey)
		old, err := store.GetLimit(ctx, m.BundleKey, int64(len(m.Bundle)))
		switch {
		case err == nil && packfiles.Digest(old) == m.Files.Digest:
			fmt.Fprintf(stderr, "%s: already in the store\n", where)
			continue
		case err == nil, errors.Is(err, blobstore.ErrTooLarge):
			fmt.Fprintf(stderr, "%s: the object there is not %s; replacing it\n", where, m.Files.Digest)
		case !blobstore.IsNotFound(err):
			return fmt.Errorf("check %s: %w", where, err)
		}
		if err := store.Put(ctx, m.BundleKey, m.Bundle); err != nil {
			return fmt.Errorf("upload files bundle: %w", err)
		}
		fmt.Fprintf(stderr, "%s: uploaded %d bytes\n", where, len(m.Bundle))
	}
	return nil
}

// pythonFlagHelp documents --python of the commands that run a local stack.
const pythonFlagHelp = "the Python interpreter for a pack's Python tools and checks (default $" + local.PythonEnv + ", else python3 on PATH); it needs the modules the pack's tools import"

// validateFlags are pack validate's command line.
type validateFlags struct {
	common
	strict                              bool
	artifacts, python, modelConfig, sec string
	timeout                             time.Duration
}

func newPackValidateCommand(d *deps) *cobra.Command {
	f := &validateFlags{}
	c := &cobra.Command{
		Use:     "validate DIR|PROJECT...",
		Short:   "Run each task's golden path with the oracle and grade it",
		Long:    packValidateLong,
		Example: `  tolokaforge pack validate examples/shop/shop_orders_02 --strict`,
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, dirs []string) error {
			return runValidate(c.Context(), f, dirs, d.stdout, d.stderr, d.selfExe)
		},
	}
	fs := c.Flags()
	fs.BoolVar(&f.strict, "strict", false, "require the whole grade to be 1.0, not only the state checks")
	fs.StringVar(&f.artifacts, "artifacts", "", "write each trial's artifacts (trials/<task_id>/0/...) under this directory")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "bound of one task's trial")
	fs.StringVar(&f.python, "python", "", pythonFlagHelp)
	fs.Var(&f.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	fs.StringVar(&f.modelConfig, "model-config", "", "JSON/YAML file whose \"judge\" model config judges the tasks with llm_judge (default: an in-process fake judge)")
	fs.StringVar(&f.sec, "secrets-dir", "", "directory of the judge's key file (the judge config's api_key_env names a file in it)")
	return c
}

func runValidate(ctx context.Context, f *validateFlags, dirs []string, stdout, stderr io.Writer, selfExe string) error {
	c, strict, artifacts, timeout, python, modelConfig, secretsDir := &f.common, &f.strict, &f.artifacts, &f.timeout, &f.python, &f.modelConfig, &f.sec
	var realJudge *task.ModelConfig
	if *modelConfig != "" {
		mf, err := loadModelFile(*modelConfig)
		if err != nil {
			return fmt.Errorf("pack validate: %w", err)
		}
		if mf.Judge == nil {
			return fmt.Errorf("pack validate: --model-config %s: no \"judge\" model config", *modelConfig)
		}
		realJudge = mf.Judge
	}
	if len(dirs) == 0 {
		return errors.New("pack validate: name at least one task directory")
	}
	cmds, err := c.commands()
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
	l, err := local.StartStack(ctx, local.StackConfig{SelfExecutable: selfExe, SecretsDir: *secretsDir, Python: *python})
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
	defer func() { _ = l.Stop() }()
	judgeFor := func(desc *task.TaskDescription) (*task.ModelConfig, error) { return realJudge, nil }
	if realJudge == nil {
		fake, err := newStandInJudge(stderr)
		if err != nil {
			return fmt.Errorf("pack validate: %w", err)
		}
		defer func() { _ = fake.Close() }()
		judgeFor = fake.For
	}
	// A project (or a folder of packs) validates every task under it.
	var tasks []string
	for _, dir := range dirs {
		found, err := pack.FindTasks(dir)
		if err != nil {
			return fmt.Errorf("pack validate: %w", err)
		}
		tasks = append(tasks, found...)
	}
	failed := 0
	for _, dir := range tasks {
		v := local.ValidatePack(ctx, l, dir, pack.Options{Builtins: builtin.Catalog{}, MCPCommands: cmds},
			local.OracleRun{ArtifactsDir: *artifacts, TrialTimeout: *timeout, JudgeFor: judgeFor}, *strict, stderr)
		status := "PASS"
		switch {
		case v.Skipped:
			status = "SKIP"
		case !v.Pass:
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
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d tasks failed validation", failed, len(tasks))}
	}
	return nil
}
