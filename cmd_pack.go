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

	"tolokaforge.io/operator/runner/tools/builtin"

	"k8s.io/apimachinery/pkg/util/validation"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/results/local"
)

// packMain runs `tolokaforge pack import|validate DIR...`.
func packMain(ctx context.Context, args []string) error {
	return runPack(ctx, args, os.Stdout, os.Stderr, "")
}

const packUsage = `usage:
  tolokaforge pack import DIR|PROJECT... [--namespace NS] [--label KEY=VALUE]... [--mcp-command SCRIPT=ARGV]... [--inline-limit BYTES] [--store URL] [--allow-lossy]
      pack.Convert Tolokaforge task directories (a project or a folder of packs:
      every task.yaml under it) to Task manifests (and
      ConfigMaps for initial states kept out of line), written to stdout as
      one YAML stream for kubectl apply --server-side -f - (a client-side
      apply copies each object into an annotation of at most 256 KiB, which a
      pack's Task or files ConfigMap can exceed). Keys that cannot be mapped are
      reported on stderr with their path; when a grading key is among them
      nothing is written (exit 1) unless --allow-lossy. A task's files travel
      as a bundle in a ConfigMap (at most 1000 KiB), or with --store URL (the
      manager's --artifacts-url) in that store under packs/sha256/<hex>.tar,
      uploaded before any manifest is written and only when not already there.
  tolokaforge pack validate DIR|PROJECT... [--strict] [--artifacts DIR] [--mcp-command SCRIPT=ARGV]... [--model-config FILE --secrets-dir DIR] [--python PY]
      Run each task's golden path with the oracle agent on a local runner and
      DB service, graded by every component the task configures. A task fails
      unless the state checks (what a golden replay decides) score 1.0 and
      every other configured component (transcript rules, trace checks, custom
      checks, the judge) grades the oracle's transcript; --strict also requires
      the whole grade to be 1.0. The judge runs against an in-process fake
      model answering every criterion met, unless --model-config gives a
      "judge" model config (its api_key_env names a key file in --secrets-dir).`

// runPack is packMain with its outputs and the runner's executable injectable.
func runPack(ctx context.Context, args []string, stdout, stderr io.Writer, selfExe string) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, packUsage)
		return errors.New("pack: a subcommand is required: import or validate")
	}
	switch args[0] {
	case "import":
		return runImport(ctx, args[1:], stdout, stderr)
	case "validate":
		return runValidate(ctx, args[1:], stdout, stderr, selfExe)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, packUsage)
		return nil
	}
	fmt.Fprintln(stderr, packUsage)
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
		script, argv, ok := pack.ParseMCPCommand(v)
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

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pack import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	var labels multiFlag
	ns := fs.String("namespace", "", "namespace of the manifests (default: kubectl's)")
	limit := fs.Int("inline-limit", pack.DefaultInlineLimit, "largest initial state kept inline in the Task, in bytes of compact JSON")
	fs.Var(&labels, "label", "KEY=VALUE label on every Task (repeatable), e.g. suite=shop for a Campaign's selector")
	fs.Var(&c.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	allowLossy := fs.Bool("allow-lossy", false, "write the manifests even when grading keys are dropped (they are listed on stderr either way)")
	storeURL := fs.String("store", "", "upload each task's files bundle to this artifact store (the manager's --artifacts-url: s3://BUCKET/PREFIX[?endpoint=...] or file:///DIR) under packs/sha256/<hex>.tar and name it by url, instead of a ConfigMap (which holds at most 1000 KiB)")
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
	opts := pack.Options{Builtins: builtin.Catalog{}, Namespace: *ns, MCPCommands: cmds, InlineLimit: *limit, Labels: map[string]string{}, Describe: local.Describer("")}
	var store *blobstore.Store
	if *storeURL != "" {
		if !blobstore.IsURL(*storeURL) {
			return fmt.Errorf("pack import: --store %q: want s3://BUCKET/PREFIX or file:///DIR", *storeURL)
		}
		// Opening contacts nothing: an unreachable store fails at upload,
		// after every pack converted, and before anything is written.
		if store, err = blobstore.Open(ctx, *storeURL); err != nil {
			return fmt.Errorf("pack import: --store: %w", err)
		}
		defer store.Close()
		opts.FilesURL = store.ObjectURL
	}
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
		ms      []*pack.Manifests
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
			return fmt.Errorf("pack import: canceled at %s, nothing written: %w", dir, ctx.Err())
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
		m, err := pack.Build(conv, opts)
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
	if dropped > 0 && !*allowLossy {
		// A pack graded on less than its author wrote would report scores
		// nobody asked for; nothing is written unless the loss is accepted.
		return &exitError{code: 1, msg: fmt.Sprintf("pack import: %d grading key(s) would be dropped (listed above); nothing written; --allow-lossy imports without them", dropped)}
	}
	if store != nil {
		// Every bundle is in the store before any Task naming it is
		// written: a Task applied from this stream never waits for its files.
		if err := pushBundles(ctx, store, ms, stderr); err != nil {
			return fmt.Errorf("pack import: %w; no manifests written", err)
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

func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer, selfExe string) error {
	fs := flag.NewFlagSet("pack validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	strict := fs.Bool("strict", false, "require the whole grade to be 1.0, not only the state checks")
	artifacts := fs.String("artifacts", "", "write each trial's artifacts (trials/<task_id>/0/...) under this directory")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound of one task's trial")
	python := fs.String("python", "", pythonFlagHelp)
	fs.Var(&c.mcp, "mcp-command", "SCRIPT=ARGV: run the tools of MCP server script SCRIPT with ARGV (repeatable)")
	modelConfig := fs.String("model-config", "", "JSON/YAML file whose \"judge\" model config judges the tasks with llm_judge (default: an in-process fake judge)")
	secretsDir := fs.String("secrets-dir", "", "directory of the judge's key file (the judge config's api_key_env names a file in it)")
	dirs, err := parseInterleaved(fs, args)
	if err != nil {
		return fmt.Errorf("pack validate: %w", err)
	}
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
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d tasks failed validation", failed, len(tasks))}
	}
	return nil
}
