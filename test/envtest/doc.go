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
// The control plane alone (CRDs, extra kube-apiserver flags) is
// test/envtest/controlplane, for suites that need no simulator or manager.
//
// Test code only: production code never imports it.
package envtest
