package shop

import (
	"bytes"
	_ "embed"
)

//go:embed task.json
var taskJSON []byte

// TaskJSON returns the TaskDescription of shop_orders_02 (runner-protocol.md) as JSON:
// the four shop tools as mcp_server tools run by `tolokaforge mcp shop`, the initial
// tables with their number literals (300.0), and the grading of grading.yaml. The
// caller owns the returned bytes.
func TaskJSON() []byte { return bytes.Clone(taskJSON) }

//go:embed task_full.json
var taskFullJSON []byte

// TaskFullJSON returns shop_orders_02_full: the same shop, tools, initial tables and
// golden path as TaskJSON, graded by every component at once (state checks with
// JSONPath, transcript rules, two trace checks, a two-criterion LLM judge and a CEL
// custom check), every one weighted and pass_threshold 1.0. Its judge names model_ref
// "judge": a trial needs a judge model config (TrialSpec.judge). The caller owns the
// returned bytes.
func TaskFullJSON() []byte { return bytes.Clone(taskFullJSON) }
