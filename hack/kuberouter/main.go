// Command kube-router is kube-router v2.1.0's network policy controller for
// the e2e cluster (test/nodecluster): its command, cut down to what the
// harness runs (flags, then kube-router's own Run; no pprof listener), built
// from the module proxy by hack/build-node.sh into bin/node. The harness runs
// it as a host process with only the firewall on (--run-firewall, no router,
// no service proxy): the bridge CNI plugin stays the pod network and
// kube-proxy the service proxy.
//
// Test clusters only: security flaws are reported against kube-router v2.1.0,
// and nothing of this module ships in the operator or its images.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cloudnativelabs/kube-router/v2/pkg/cmd"
	"github.com/cloudnativelabs/kube-router/v2/pkg/options"
	"github.com/cloudnativelabs/kube-router/v2/pkg/version"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	// klog's flags live on the standard flag set (kubernetes/kubernetes#17162).
	if err := flag.CommandLine.Parse(nil); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	if err := flag.Set("logtostderr", "true"); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return fmt.Errorf("kube-router: flags: %w", err)
	}
	switch {
	case config.HelpRequested:
		pflag.Usage()
		return nil
	case config.Version:
		version.PrintVersion(false)
		return nil
	case os.Geteuid() != 0:
		return fmt.Errorf("kube-router: needs root (iptables, ipset)")
	}
	kr, err := cmd.NewKubeRouterDefault(config)
	if err != nil {
		return fmt.Errorf("kube-router: config: %w", err)
	}
	return kr.Run()
}
