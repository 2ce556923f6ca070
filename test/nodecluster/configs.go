package nodecluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// containerdConfig gives containerd its own root, state, socket and runc root,
// so it never meets a system containerd. restrict_oom_score_adj: this VM drops
// CAP_SYS_RESOURCE, and every sandbox asking for oom_score_adj -998 failed in
// runc's nsexec without it. The CRI plugin reads registry hosts from
// certsDir (config_path: one <host:port>/hosts.toml per registry), which is
// how it pulls from the cluster's registry over plain HTTP.
func containerdConfig(dir, cniConfDir, certsDir string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[7]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), filepath.Join(dir, "opt"), PauseImage,
		filepath.Join(dir, "runc"), cniConfDir, certsDir)
}

// registryHostsTOML is containerd's hosts.toml for the cluster's registry at
// addr (host:port): plain HTTP, pull and resolve (a tag or a digest).
func registryHostsTOML(addr string) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, addr)
}

// writeRegistryHosts writes certsDir/<addr>/hosts.toml.
func writeRegistryHosts(certsDir, addr string) error {
	d := filepath.Join(certsDir, addr)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(registryHostsTOML(addr)), 0o644)
}

// registryConfig is Debian's docker-registry (the distribution registry)
// listening on addr, its blobs under storage; deleting is allowed so a
// cache can be pruned with the registry's own garbage collector.
func registryConfig(addr, storage string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
`, storage, addr)
}

// cniConfig is a bridge of the cluster's own name with host-local IPAM whose
// leases live under the cluster's directory.
func cniConfig(ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "tolokaforge-e2e",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, Bridge, PodCIDR, ipamDir)
}

// kubeletConfig: failCgroupV1 false (this VM is cgroup v1), cgroupfs, eviction
// relaxed and image GC off, because nothing can be pulled again here;
// clusterDNS is the kube-dns Service (DNSServiceIP).
func kubeletConfig(pki func(string) string, containerdSock, podLogsDir string, port int, dnsIP string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
port: %d
healthzPort: 0
readOnlyPort: 0
address: 0.0.0.0
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
clusterDomain: cluster.local
clusterDNS: [%s]
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 250
resolvConf: /etc/resolv.conf
`, containerdSock, podLogsDir, port, pki("kubelet.crt"), pki("kubelet.key"), pki("ca.crt"), dnsIP)
}

// kubeProxyConfig: iptables mode; conntrack settings 0 and no localhost
// NodePorts, so kube-proxy leaves nf_conntrack_* and route_localnet alone.
func kubeProxyConfig(kubeconfig string, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: %s
clusterCIDR: %s
clientConnection:
  kubeconfig: %s
metricsBindAddress: "127.0.0.1:%d"
healthzBindAddress: ""
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, NodeName, PodCIDR, kubeconfig, metricsPort)
}
