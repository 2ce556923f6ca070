//go:build !dev

package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// The production binary leaves out `tolokaforge dev`: it would link envtest's
// control-plane driver, the pod simulator and the fake LLM into an image that
// runs in clusters. `make demo` builds with -tags dev.
func newDevCommand(*deps) *cobra.Command {
	return &cobra.Command{
		Use:                "dev",
		Short:              "Local control plane (only in a build with -tags dev, as `make demo` makes)",
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if asksHelp(args) {
				return c.Help()
			}
			return errors.New("this binary was built without `dev`; build it with `go build -tags dev` (make demo does)")
		},
	}
}
