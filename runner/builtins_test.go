package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
	"tolokaforge.io/operator/runner/tools/builtin"
)

type builtinTool = builtin.Builtin

type fnTool func(ctx context.Context, args json.RawMessage) (string, error)

func (f fnTool) Call(ctx context.Context, args json.RawMessage) (string, error) { return f(ctx, args) }

// Extra builtins for behaviours no real tool should have.
var (
	boomTool = builtin.Builtin{
		Name: "boom", Description: "panics", Category: task.CategoryCompute,
		Parameters: json.RawMessage(`{"type":"object"}`),
		New: func(builtin.Env) tools.Tool {
			return fnTool(func(context.Context, json.RawMessage) (string, error) { panic("kaboom") })
		},
	}
	napTool = builtin.Builtin{
		Name: "nap", Description: "blocks until cancelled", Category: task.CategoryCompute,
		Parameters: json.RawMessage(`{"type":"object"}`),
		New: func(builtin.Env) tools.Tool {
			return fnTool(func(ctx context.Context, _ json.RawMessage) (string, error) {
				select {
				case <-ctx.Done():
					return "", ctx.Err()
				case <-time.After(time.Minute):
					return "", errors.New("nap was not cancelled")
				}
			})
		},
	}
)
