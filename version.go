package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/api/task"
)

// version is the release version: the image tag (`make image`), the chart's
// appVersion and `tolokaforge version` all come from this line (hack/image
// reads it). A build may still override it with -ldflags "-X main.version=...".
var version = "v0.1.0"

func runVersion(context.Context, []string) error {
	_, err := fmt.Fprintf(os.Stdout, "tolokaforge %s (engine protocol %d)\n", version, task.EngineProtocolVersion)
	return err
}
