// Command etcd is the upstream etcd server built from go.etcd.io/etcd/server/v3
// so envtest runs against a real store without downloading binaries.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
