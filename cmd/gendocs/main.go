//go:build dev

// Command gendocs writes the command line's reference (docs/cli/*.md) from
// the cobra command tree: go run -tags dev ./cmd/gendocs docs/cli (make docs).
// It is in the -tags dev build only, as cli.WriteReference is: the
// production binary links no Markdown generator.
//
// Imports: cmd/tolokaforge/cli and the standard library.
package main

import (
	"fmt"
	"os"

	"tolokaforge.io/operator/cmd/tolokaforge/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendocs DIR")
		os.Exit(2)
	}
	if err := cli.WriteReference(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
