package host

import (
	"context"
	"fmt"

	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/api/task"
)

// next asks an actor for its turn, turning a panic into an error: an actor is
// caller-supplied code, and one bad trial must not take the manager down.
func next(ctx context.Context, a Actor, conv []task.Message, tools []*runnerpb.ToolSchema) (turn Turn, err error) {
	defer func() {
		if p := recover(); p != nil {
			turn, err = Turn{}, fmt.Errorf("actor panicked: %v", p)
		}
	}()
	return a.Next(ctx, conv, tools)
}
