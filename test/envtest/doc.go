// Package envtest is the one envtest framework of the controller suites: a
// real kube-apiserver and etcd with the CRDs installed, the pod simulator
// (test/podsim) running runner.MainWith and dbservice.Main in process for
// every pod a manager creates, managers started in process
// (controllers/manager New/Run), the instruments the suites observe them
// with (gated agents, a runner RPC log, an API request counter), and object
// builders in the style of JobSet's testing wrappers:
//
//	envtest.MakeTrial("t", ns).Task("shop").Agent(envtest.Oracle()).Obj()
//
// A warm slot's pod (two containers, its DB service on the pod's loopback)
// is adapted to the simulator, which runs a pod's first container on an
// address of its own (slots.go).
//
// The control plane alone (CRDs, extra kube-apiserver flags) is
// test/envtest/controlplane, for suites that need no simulator or manager.
//
// Test code only: production code never imports it.
//
// Imports: api/runnerpb, api/task, api/v1alpha1, controllers, controllers/host,
// controllers/host/agents, controllers/manager, dbservice, examples/shop, runner,
// runner/grading, test/envtest/controlplane, test/podsim, test/toollauncher, the
// standard library, github.com/go-logr/logr, google.golang.org/grpc,
// google.golang.org/protobuf, k8s.io/apiextensions-apiserver, k8s.io/apimachinery, k8s.io/client-go and
// sigs.k8s.io/controller-runtime.
package envtest
