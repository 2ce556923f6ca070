// Command kubectl is built from the same pinned Kubernetes release as the API
// server, so `make demo` works on a machine without a kubectl package.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"os"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
