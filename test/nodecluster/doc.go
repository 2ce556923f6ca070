// Package nodecluster brings up and tears down a single-node Kubernetes
// cluster on this machine for the e2e suite (test/e2e, `make e2e`): etcd and
// kube-apiserver as hack/build-envtest.sh builds them, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy as hack/build-node.sh builds them,
// Debian's containerd, runc and CNI plugins, and the pause image of
// `hack/image pause`. Everything it writes lives under its own directory
// (bin/cluster), its own bridge and its own iptables chains; the fixed paths
// kubelet and the CNI plugins insist on, and the sysctls kubelet, kube-proxy
// and the bridge plugin set, are recorded at Up and put back at Down, which
// stops every process by the PID Up recorded.
//
// Imports: the standard library, k8s.io/api, k8s.io/apimachinery and
// k8s.io/client-go.
package nodecluster
