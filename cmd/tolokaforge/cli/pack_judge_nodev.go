//go:build !dev

package cli

import (
	"fmt"
	"io"

	"tolokaforge.io/operator/api/task"
)

// The production binary links no fake LLM (issue 13), so it has no stand-in judge:
// a judged task validates only against a judge the user names. The dev build
// (pack_judge.go) answers from test/fakellm instead.
type standInJudge struct{}

func newStandInJudge(io.Writer) (*standInJudge, error) { return &standInJudge{}, nil }

func (*standInJudge) For(desc *task.TaskDescription) (*task.ModelConfig, error) {
	return nil, fmt.Errorf("task %s has an llm_judge and no judge model is configured: give --model-config with a "+
		"\"judge\" entry (its key file in --secrets-dir), or validate with the dev build (make build-dev: "+
		"bin/tolokaforge-dev), whose in-process stand-in judge meets every criterion", desc.TaskID)
}

func (*standInJudge) Close() error { return nil }
