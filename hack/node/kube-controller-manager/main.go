// Command kube-controller-manager is the upstream controller manager built from
// k8s.io/kubernetes for the e2e cluster (hack/cluster).
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream links it

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
