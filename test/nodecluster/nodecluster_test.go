package nodecluster

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
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
		{"containerd", containerdConfig("/d/containerd", "/d/cni/net.d"), []string{
			"restrict_oom_score_adj = true", `sandbox_image = "` + PauseImage + `"`, "SystemdCgroup = false",
			`address = "/d/containerd/containerd.sock"`, `root = "/d/containerd/root"`, `Root = "/d/containerd/runc"`,
			`conf_dir = "/d/cni/net.d"`, `path = "/d/containerd/opt"`}},
		{"kubelet", kubeletConfig(func(n string) string { return "/pki/" + n }, "/d/c.sock", "/d/pod-logs", 10250, "192.0.2.2"), []string{
			"failCgroupV1: false", "cgroupDriver: cgroupfs", "imageGCHighThresholdPercent: 100", "clusterDNS: [192.0.2.2]",
			"containerRuntimeEndpoint: unix:///d/c.sock", "podLogsDir: /d/pod-logs", "readOnlyPort: 0",
			`nodefs.available: "1%"`}},
		{"kube-proxy", kubeProxyConfig("/d/kp.kubeconfig", 4321), []string{
			"mode: iptables", "localhostNodePorts: false", "maxPerCore: 0", `metricsBindAddress: "127.0.0.1:4321"`}},
		{"coredns", coreDNSConfig("192.0.2.2", "/d/admin.kubeconfig"), []string{
			"cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {", "bind 192.0.2.2", "kubeconfig /d/admin.kubeconfig",
			"forward . /etc/resolv.conf"}},
		{"cni", cniConfig("/d/ipam"), []string{`"bridge": "` + Bridge + `"`, `"dataDir": "/d/ipam"`, `"subnet": "` + PodCIDR + `"`}},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.text, w) {
				t.Errorf("%s config lacks %q:\n%s", tc.name, w, tc.text)
			}
		}
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
