// Command coredns is a cut-down CoreDNS for the e2e cluster (test/nodecluster):
// only the plugins its Corefile uses (errors, cache, kubernetes, forward; bind
// kept for a Corefile that names an address), so it builds in seconds from the
// module proxy. hack/e2e.sh makes it a one-binary image (`hack/image single`)
// that runs as the cluster's kube-system DNS pods.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

// The plugins run in this order whatever order a server block names them
// in (CoreDNS's own order, core/dnsserver/zdirectives.go, for these five).
var directives = []string{"bind", "errors", "cache", "kubernetes", "forward"}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
