// Command pause is the sandbox process of the e2e cluster's pods (hack/cluster):
// it holds the pod's namespaces, reaps the orphans it inherits as PID 1, and
// exits on SIGTERM or SIGINT. `image pause` packs it as the only file of the
// image containerd's sandbox_image names; no registry is reachable to pull
// registry.k8s.io/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several exits: reap until none is left.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
