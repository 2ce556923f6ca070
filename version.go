package main

import (
	"context"
	"fmt"
	"os"

	"tolokaforge.io/operator/api/task"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func runVersion(context.Context, []string) error {
	_, err := fmt.Fprintf(os.Stdout, "tolokaforge %s (engine protocol %d)\n", version, task.EngineProtocolVersion)
	return err
}
