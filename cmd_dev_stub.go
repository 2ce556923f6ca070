//go:build !dev

package main

import (
	"context"
	"errors"
)

// The production binary leaves out `tolokaforge dev`: it would link envtest's
// control-plane driver, the pod simulator and the fake LLM into an image that
// runs in clusters. `make demo` builds with -tags dev.
const devSummary = "local control plane (only in a build with -tags dev, as `make demo` makes)"

func devMain(context.Context, []string) error {
	return errors.New("this binary was built without `dev`; build it with `go build -tags dev` (make demo does)")
}
