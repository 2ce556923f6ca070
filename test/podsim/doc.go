// Package podsim is the test and dev stand-in for kubelet: there is no node in
// envtest or `tolokaforge dev`, so nothing would ever run our pods. The
// Simulator watches pods that match a label selector, gives each a unique
// loopback address (127.0.0.0/8 is routed to lo on Linux, so servers can bind
// to it), starts the pod's first container either as a real subprocess or as an
// in-process function, executes its readiness probe against that address and
// reports status through the pods/status subresource the way kubelet does.
// Deleting a pod kills its container; Kill injects pod loss (exit code 137).
//
// It is a test harness that never imports the operator's own packages, so any
// of them can use it in tests without import cycles.
//
// Imports: the standard library, github.com/go-logr/logr,
// google.golang.org/grpc (gRPC readiness probes), k8s.io/api,
// k8s.io/apimachinery and k8s.io/client-go.
package podsim
