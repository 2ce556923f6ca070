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
