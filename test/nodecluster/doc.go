// Package nodecluster brings up and tears down a single-node Kubernetes
// cluster on this machine for the e2e suite (test/e2e, `make e2e`): etcd and
// kube-apiserver as hack/build-envtest.sh builds them, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy as hack/build-node.sh builds them,
// Debian's containerd, runc and CNI plugins, and the pause image of
// `hack/image pause`. NetworkPolicy is enforced by kube-router v2.1.0's
// network policy controller alone (a host process, also built by
// hack/build-node.sh; a test-cluster-only part, with security flaws reported
// against that version), and the cluster's DNS is CoreDNS as kube-system pods
// labelled k8s-app=kube-dns behind the kube-dns Service (dns.go; the image of
// hack/coredns), the only DNS the operator's runner policy admits. An image
// registry (Debian's docker-registry, on 127.0.0.1:Options.RegistryPort, its
// storage in the machine cache so images outlive the cluster) serves task
// images `pack build` pushes; containerd pulls from it over plain HTTP
// through a hosts.toml in its config_path.
// Everything it writes lives under its own directory (bin/cluster: configs,
// certificates, etcd's data, logs) and a short runtime directory for what
// holds unix sockets (containerd, kubelet's root: RunRoot/<hash of the
// directory>, so a checkout at any path fits a socket path), its own bridge
// and its own iptables chains; every process Up starts is watched, and a wait
// ends at once, with the process's exit status and log tail, when one has
// exited. The fixed paths kubelet and the CNI
// plugins insist on, and the sysctls kubelet, kube-proxy and the bridge plugin
// set, are recorded at Up and put back at Down, which stops every process by
// the PID Up recorded and removes kube-router's chains and the ipsets it
// created whether or not it is still running.
//
// Imports: the standard library, k8s.io/api, k8s.io/apimachinery and
// k8s.io/client-go.
package nodecluster
