// Command coredns is a cut-down CoreDNS for the e2e cluster (test/nodecluster):
// only the plugins its Corefile uses (bind, errors, cache, kubernetes,
// forward), so it builds in seconds from the module proxy. hack/build-node.sh
// builds it into bin/node with the node binaries.
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
