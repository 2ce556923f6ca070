package local

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/api/task/pack"
	"tolokaforge.io/operator/runner/pyenv"
)

// Describer is the pack.Describer of `pack import`, `pack validate` and `trial
// run`: a registry script's tools read once with the interpreter python would
// choose (StackConfig.Python's rules; "" for none given), within
// pyenv.DescribeTimeout.
func Describer(python string) pack.Describer {
	return pyenv.Describer(StackConfig{Python: python}.python(), 0)
}

// CheckPython refuses, before a run, a task whose Python files (its tool_artifacts)
// import a module the stack's interpreter cannot import, naming the module, `make
// python-deps` and --python. A task with no .py files passes.
func (s *Stack) CheckPython(ctx context.Context, desc *task.TaskDescription) error {
	files := map[string][]byte{}
	for p, enc := range desc.ToolArtifacts {
		if !strings.HasSuffix(p, ".py") {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return fmt.Errorf("tool_artifacts %s: %w", p, err)
		}
		files[p] = b
	}
	if len(files) == 0 {
		return nil
	}
	python := s.Python
	if python == "" {
		python = StackConfig{}.python()
	}
	return pyenv.Check(ctx, python, files)
}
