package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"tolokaforge.io/operator/examples/shop"
)

// newMCPCommand serves the example MCP servers shipped in the binary, so a
// runner pod built from the same image can spawn them as `tolokaforge mcp
// <name>`. Usage and errors go to stderr: stdout carries only the MCP
// protocol.
func newMCPCommand(d *deps) *cobra.Command {
	c := groupCommand("mcp", "Serve a built-in example MCP server over stdio: mcp shop", func(args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("usage: tolokaforge mcp shop [--state FILE]")
		}
		return fmt.Errorf("unknown MCP server %q (available: shop)", args[0])
	})
	c.AddCommand(newShopCommand(d))
	return c
}

func newShopCommand(d *deps) *cobra.Command {
	var opts shop.Options
	c := &cobra.Command{
		Use:   "shop",
		Short: "The example shop's MCP server (products, customers, orders)",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			serve := d.serveShop
			if serve == nil {
				serve = shop.Main
			}
			return serve(c.Context(), opts)
		},
	}
	c.SetOut(d.stderr)
	c.Flags().StringVar(&opts.StatePath, "state", "", "JSON file {products, customers, orders} to start from (default: empty until "+shop.SetStateTool+")")
	return c
}
