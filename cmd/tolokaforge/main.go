// Command tolokaforge is the one binary of the Tolokaforge trial operator: the
// manager (operator + host), the runner, the DB service, local trials, pack
// tools and a local development cluster, chosen by subcommand. Its command
// line is package cli; this file only hands it the process.
//
// Imports: cmd/tolokaforge/cli and the standard library.
package main

import (
	"os"

	"tolokaforge.io/operator/cmd/tolokaforge/cli"
)

func main() {
	os.Exit(cli.Main(version, os.Args))
}
