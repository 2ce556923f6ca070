package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"tolokaforge.io/operator/api/task"
)

func newVersionCommand(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the engine protocol version",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(d.stdout, "tolokaforge %s (engine protocol %d)\n", d.version, task.EngineProtocolVersion)
			return err
		},
	}
}
