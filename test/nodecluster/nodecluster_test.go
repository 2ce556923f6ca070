package nodecluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConfigsCarryTheBlockersFixes: the two settings without which no pod
// ran on this VM, and the ones that keep the cluster off fixed paths.
func TestConfigsCarryTheBlockersFixes(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"containerd", containerdConfig("/d/containerd", "/d/cni/net.d", "/d/containerd/certs.d"), []string{
			`config_path = "/d/containerd/certs.d"`,
			"restrict_oom_score_adj = true", `sandbox_image = "` + PauseImage + `"`, "SystemdCgroup = false",
			`address = "/d/containerd/containerd.sock"`, `root = "/d/containerd/root"`, `Root = "/d/containerd/runc"`,
			`conf_dir = "/d/cni/net.d"`, `path = "/d/containerd/opt"`}},
		{"kubelet", kubeletConfig(func(n string) string { return "/pki/" + n }, "/d/c.sock", "/d/pod-logs", 10250, "192.0.2.2"), []string{
			"failCgroupV1: false", "cgroupDriver: cgroupfs", "imageGCHighThresholdPercent: 100", "clusterDNS: [192.0.2.2]",
			"containerRuntimeEndpoint: unix:///d/c.sock", "podLogsDir: /d/pod-logs", "readOnlyPort: 0",
			`nodefs.available: "1%"`}},
		{"kube-proxy", kubeProxyConfig("/d/kp.kubeconfig", 4321), []string{
			"mode: iptables", "localhostNodePorts: false", "maxPerCore: 0", `metricsBindAddress: "127.0.0.1:4321"`}},
		{"coredns", coreDNSConfig(), []string{
			".:53 {", "kubernetes cluster.local in-addr.arpa ip6.arpa {", "forward . /etc/resolv.conf"}},
		{"registry hosts", registryHostsTOML("127.0.0.1:5055"), []string{
			`server = "http://127.0.0.1:5055"`, `[host."http://127.0.0.1:5055"]`, `capabilities = ["pull", "resolve"]`}},
		{"registry", registryConfig("127.0.0.1:5055", "/cache/registry"), []string{
			`rootdirectory: "/cache/registry"`, `addr: "127.0.0.1:5055"`}},
		{"cni", cniConfig("/d/ipam"), []string{`"bridge": "` + Bridge + `"`, `"dataDir": "/d/ipam"`, `"subnet": "` + PodCIDR + `"`}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.text, w) {
				t.Errorf("%s config lacks %q:\n%s", tc.name, w, tc.text)
			}
		}
	}
}

// TestCoreDNSIsWhatRunnerPoliciesAdmit: the operator's runner egress policy
// admits DNS only to kube-system pods labelled k8s-app=kube-dns on port 53
// (controllers.RunnersPolicy); with kube-router enforcing it, the cluster's
// DNS must be such a pod, listening on 53 itself (policy ports match after
// the Service's DNAT), behind the Service kubelet's clusterDNS names.
func TestCoreDNSIsWhatRunnerPoliciesAdmit(t *testing.T) {
	_, role, binding, cm, dep, svc := dnsObjects()
	if dep.Namespace != "kube-system" || dep.Spec.Template.Labels["k8s-app"] != "kube-dns" {
		t.Errorf("Deployment %s/%s pod labels %v, want kube-system and k8s-app=kube-dns", dep.Namespace, dep.Name, dep.Spec.Template.Labels)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != CoreDNSImage || c.ImagePullPolicy != "Never" {
		t.Errorf("image %s pull %s", c.Image, c.ImagePullPolicy)
	}
	ports := map[string]bool{}
	for _, p := range c.Ports {
		ports[string(p.Protocol)+"/"+strconv.Itoa(int(p.ContainerPort))] = true
	}
	if !ports["UDP/53"] || !ports["TCP/53"] {
		t.Errorf("container ports %v, want UDP and TCP 53", c.Ports)
	}
	if svc.Name != "kube-dns" || svc.Spec.ClusterIP != DNSServiceIP {
		t.Errorf("Service %s at %s, want kube-dns at %s", svc.Name, svc.Spec.ClusterIP, DNSServiceIP)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port != 53 || p.TargetPort.IntValue() != 53 {
			t.Errorf("Service port %+v, want 53 -> 53", p)
		}
	}
	if !strings.Contains(kubeletConfig(func(n string) string { return n }, "s", "l", 1, DNSServiceIP), "clusterDNS: ["+DNSServiceIP+"]") {
		t.Error("kubelet's clusterDNS is not the kube-dns Service")
	}
	if cm.Data["Corefile"] != coreDNSConfig() || binding.RoleRef.Name != role.Name {
		t.Error("ConfigMap or binding does not match")
	}
	sc := dep.Spec.Template.Spec.SecurityContext
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || len(sc.Sysctls) != 1 || sc.Sysctls[0].Value != "53" {
		t.Errorf("pod security context %+v: want non-root, port 53 unprivileged by the pod's sysctl", sc)
	}
}

// TestKubeletCertServesTheNodeIP: the API server reaches kubelet at the
// node's InternalIP and verifies it against the cluster CA.
func TestKubeletCertServesTheNodeIP(t *testing.T) {
	dir := t.TempDir()
	p, err := newPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.issue(certSpec{name: "kubelet", cn: NodeName, server: true, ips: []net.IP{net.ParseIP("192.0.2.2")}}, 2); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kubelet.crt"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "192.0.2.2", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("kubelet cert for 192.0.2.2: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "192.0.2.3"}); err == nil {
		t.Error("kubelet cert verified for an address it does not name")
	}
}

// TestUpRefusesALiveState: a second up would orphan the first cluster's
// processes; it is refused, naming the state file, and the state is kept.
func TestUpRefusesALiveState(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, stateFile)
	if err := os.WriteFile(state, []byte(`{"dir":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Up(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), state+" exists") || !strings.Contains(err.Error(), "run down first") {
		t.Fatalf("Up = %v, want the refusal naming %s", err, state)
	}
	if b, _ := os.ReadFile(state); string(b) != `{"dir":"x"}` {
		t.Errorf("state changed by the refused Up: %q", b)
	}
}

// TestDownWithoutStateIsANoop: make e2e runs down before up, on a machine
// that never had a cluster.
func TestDownWithoutStateIsANoop(t *testing.T) {
	var log bytes.Buffer
	if err := Down(context.Background(), t.TempDir(), &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "nothing to tear down") {
		t.Errorf("log %q", log.String())
	}
}

// TestAliveChecksStartTime: a PID reused by another process is not ours to
// signal.
func TestAliveChecksStartTime(t *testing.T) {
	self := os.Getpid()
	start := procStart(self)
	if start == 0 {
		t.Fatal("procStart(self) = 0")
	}
	for _, tc := range []struct {
		p    Proc
		want bool
	}{
		{Proc{Name: "x", PID: self, Start: start}, true},
		{Proc{Name: "x", PID: self, Start: start + 1}, false},
		{Proc{Name: "x", PID: self, Start: 0}, false},
	} {
		if got := alive(&State{Procs: []Proc{tc.p}}, "x"); got != tc.want {
			t.Errorf("alive(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
