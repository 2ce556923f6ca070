package pyenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/runner/proc"
	"tolokaforge.io/operator/runner/tools/mcpclient"
	"tolokaforge.io/operator/runner/tools/pyhost"
)

// DescribeTimeout bounds reading one registry script's schemas at import.
const DescribeTimeout = 30 * time.Second

// Describer returns a pack.Describer that runs the registry script's tools in a
// standard-library tool host under python, in a scratch copy of the task's files,
// and answers each tool's get_info(); timeout bounds the whole (DescribeTimeout
// when 0). A tool that fails to load fails the import naming it, with an
// ImportError's pip advice rewritten (RewriteHint).
func Describer(python string, timeout time.Duration) pack.Describer {
	if timeout <= 0 {
		timeout = DescribeTimeout
	}
	return func(ctx context.Context, req pack.DescribeRequest) (map[string]pack.DescribedTool, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		work, err := os.MkdirTemp("", "tolokaforge-describe-")
		if err != nil {
			return nil, fmt.Errorf("describe tools: %w", err)
		}
		defer os.RemoveAll(work)
		files := filepath.Join(work, "files")
		for p, b := range req.Files {
			dst := filepath.Join(files, filepath.FromSlash(p))
			if rel, err := filepath.Rel(files, dst); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return nil, fmt.Errorf("describe tools: file %q leaves the task's files", p)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, fmt.Errorf("describe tools: %w", err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return nil, fmt.Errorf("describe tools: %w", err)
			}
		}
		script := filepath.Join(files, filepath.FromSlash(req.Script))
		// The pack author's code runs here, on the importing user's machine
		// (or the operator's): confined to the scratch copy and the Python
		// runtime (Landlock, where the kernel has it), under the tools'
		// default limits, and under a supervisor, so nothing it starts at
		// import outlives the describe.
		confine := &proc.Confinement{ReadOnly: []string{files}, ReadWrite: []string{work}}
		env := []string{"TMPDIR=" + work}
		if req.Stdio {
			return listTools(ctx, python, files, script, timeout, mcpclient.Config{Env: env, Limits: proc.DefaultLimits, Confine: confine})
		}
		h, err := pyhost.Start(pyhost.Config{Python: python, Dir: files, ScriptDir: work,
			Paths: []string{filepath.Dir(script), files}, Logger: logr.Discard(),
			Env: env, Limits: proc.DefaultLimits, Confine: confine})
		if err != nil {
			return nil, fmt.Errorf("start the Python tool host (%s): %w", python, err)
		}
		defer h.Close()
		specs := make([]pyhost.ToolSpec, 0, len(req.Tools))
		for _, n := range req.Tools {
			specs = append(specs, pyhost.ToolSpec{Name: n, Style: pyhost.StyleRegistry, Script: script, Class: n})
		}
		infos, err := h.Load(ctx, specs)
		if err != nil {
			var le *pyhost.LoadError
			if errors.As(err, &le) {
				return nil, fmt.Errorf("load tool %s with %s: %s", le.Tool, python, RewriteHint(le.Message))
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("the tools did not load within %s: %w", timeout, ctx.Err())
			}
			return nil, fmt.Errorf("load the tools with %s: %w", python, err)
		}
		out := make(map[string]pack.DescribedTool, len(infos))
		for n, info := range infos {
			out[n] = pack.DescribedTool{Description: info.Description, Parameters: info.Parameters}
		}
		return out, nil
	}
}

// listTools starts script as a stdio MCP server under python (with cfg's
// environment, limits and confinement) and answers its tools/list.
func listTools(ctx context.Context, python, dir, script string, timeout time.Duration, cfg mcpclient.Config) (map[string]pack.DescribedTool, error) {
	cfg.Command, cfg.Dir, cfg.Logger = []string{python, "-I", "-B", script}, dir, logr.Discard()
	srv, err := mcpclient.Start(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("the MCP server did not answer within %s: %w", timeout, ctx.Err())
		}
		return nil, fmt.Errorf("start the MCP server with %s: %s", python, RewriteHint(err.Error()))
	}
	defer srv.Close()
	tools, err := srv.StartTools()
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	out := make(map[string]pack.DescribedTool, len(tools))
	for _, t := range tools {
		out[t.Name] = pack.DescribedTool{Description: t.Description, Parameters: t.InputSchema}
	}
	return out, nil
}
