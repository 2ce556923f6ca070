package nodecluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Fixed names of the cluster: its own, so nothing else on the machine is
// mistaken for it at teardown.
const (
	NodeName    = "tf-e2e-node"
	Bridge      = "tfe2e0"
	PodCIDR     = "10.244.0.0/24"
	ServiceCIDR = "10.96.0.0/24"
	// PauseImage is containerd's sandbox_image (hack/image pause).
	PauseImage = "tolokaforge.local/pause:1"
	stateFile  = "state.json"
)

// fixedPaths are the paths kubelet, containerd's shims and the CNI plugins use
// whatever their flags say; Down removes the ones Up found missing.
var fixedPaths = []string{"/var/lib/kubelet", "/var/log/pods", "/var/log/containers", "/var/lib/cni", "/run/containerd", "/run/netns"}

// sysctls are the keys kubelet (protectKernelDefaults off), kube-proxy and the
// bridge plugin write; Up records them, Down writes the recorded values back.
var sysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/conf/all/route_localnet", "net/ipv4/ip_forward",
	"net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
}

// RunRoot is where the cluster's short runtime directories live: unix
// sockets (containerd's, its ttrpc socket, kubelet's pod-resources and
// device-plugin sockets) must fit in sun_path (108 bytes, 104 on some
// tools), which a checkout at a long path does not leave room for.
const RunRoot = "/run/tolokaforge-e2e"

// maxSocketPath is the longest socket path Up accepts: containerd refuses
// more than 104 bytes ("unix socket path too long (> 104)").
const maxSocketPath = 104

// Options says where the binaries are and where the cluster lives.
type Options struct {
	// Dir holds the cluster's configs, certificates, etcd's data and the
	// processes' logs (bin/cluster); Up wipes it first.
	Dir string
	// RunDir holds what has unix sockets in it: containerd's root, state
	// and sockets, and kubelet's root directory. Empty: DefaultRunDir(Dir).
	// Up wipes it first; Down removes it.
	RunDir string
	// K8sBin holds etcd and kube-apiserver (bin/k8s); NodeBin kubelet,
	// kube-proxy, kube-scheduler and kube-controller-manager (bin/node).
	K8sBin, NodeBin string
	// Images are `ctr images import` tarballs loaded into the node; the
	// pause image must be one of them.
	Images []string
	// NodeIP is the address the API server advertises and kubelet reports;
	// empty: the source address of the default route. Pods reach the API
	// server through it, so it must not be loopback.
	NodeIP string
	// RegistryPort is the port of the cluster's image registry on
	// 127.0.0.1 (Debian's docker-registry, a watched process like the
	// others): the node pulls from it over plain HTTP, and `pack build
	// --registry 127.0.0.1:PORT --insecure-registry` pushes task images to
	// it. 0: DefaultRegistryPort.
	RegistryPort int
	// RegistryDir is the registry's storage. It outlives the cluster (Down
	// leaves it): images pushed by one run are there for the next, which is
	// what caches the e2e's task image builds across runs. Empty:
	// DefaultRegistryDir().
	RegistryDir string
	// Log receives progress lines.
	Log io.Writer
}

// DefaultRegistryPort is the cluster registry's port unless Options says.
const DefaultRegistryPort = 5055

// DefaultRegistryDir is the registry's storage in the machine's build cache
// (hack/cache.sh's root): ${TOLOKAFORGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tolokaforge}/registry.
func DefaultRegistryDir() string {
	if d := os.Getenv("TOLOKAFORGE_CACHE"); d != "" {
		return filepath.Join(d, "registry")
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "tolokaforge", "registry")
}

// registryReady is the registry answering GET /v2/ with 200.
func registryReady(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET http://%s/v2/: %s", addr, resp.Status)
	}
	return nil
}

// Proc is one process Up started.
type Proc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Start is the process's start time in clock ticks (/proc/PID/stat field
	// 22): Down signals a PID only while it still names this process.
	Start uint64 `json:"start"`
}

// State is what Down needs, written to Dir/state.json as soon as each part
// exists, so a failed Up is torn down as far as it got.
type State struct {
	Dir     string            `json:"dir"`
	RunDir  string            `json:"runDir"`
	Procs   []Proc            `json:"procs"`
	Sysctls map[string]string `json:"sysctls"`
	Created []string          `json:"created"`
	Netns   []string          `json:"netnsBefore"`
	// NftTables are the nftables tables before Up: iptables-nft creates
	// ip/ip6 filter, nat and mangle on first use, and Down removes those.
	NftTables []string `json:"nftTablesBefore"`
	// IPSets are the ipsets before Up: kube-router creates its own, and
	// Down destroys those once the iptables rules naming them are gone.
	IPSets     []string `json:"ipsetsBefore"`
	Containerd string   `json:"containerdSocket"`
	// Registry is the cluster registry's HOST:PORT (plain HTTP), the
	// --registry of `pack build`.
	Registry   string `json:"registry"`
	Kubeconfig string `json:"kubeconfig"`
	NodeBin    string `json:"nodeBin"`
}

func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, stateFile), b, 0o600)
}

// LoadState reads the state Up wrote under dir.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("cluster state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("cluster state %s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

// DefaultRunDir is RunRoot/<12 hex of the cluster directory's absolute
// path>: short whatever the checkout's path, one per cluster directory, the
// same for Up and Down.
func DefaultRunDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(RunRoot, hex.EncodeToString(sum[:6]))
}

// socketPaths are the unix sockets the cluster's processes bind under run.
func socketPaths(run string) []string {
	kubeletRoot := filepath.Join(run, "kubelet", "root")
	return []string{
		filepath.Join(run, "containerd", "containerd.sock"),
		filepath.Join(run, "containerd", "containerd.sock.ttrpc"),
		filepath.Join(kubeletRoot, "pod-resources", "kubelet.sock"),
		filepath.Join(kubeletRoot, "device-plugins", "kubelet.sock"),
		filepath.Join(kubeletRoot, "plugins_registry", "kubelet.sock"),
	}
}

// checkSocketPaths refuses a run directory whose sockets would not fit,
// before anything starts, naming the longest.
func checkSocketPaths(run string) error {
	for _, p := range socketPaths(run) {
		if len(p) > maxSocketPath {
			return fmt.Errorf("cluster: socket path %s is %d bytes, over the %d a unix socket allows; choose a shorter run directory", p, len(p), maxSocketPath)
		}
	}
	return nil
}

// Up starts the cluster and returns once the node is Ready. On error the
// caller still runs Down(Dir): the state names what was started.
func Up(ctx context.Context, o Options) (*State, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	logf := func(f string, a ...any) { fmt.Fprintf(o.Log, "cluster: "+f+"\n", a...) }
	// Kubeconfigs and configs name files by absolute path: the processes
	// read them from their own working directory.
	if o.RunDir == "" {
		o.RunDir = DefaultRunDir(o.Dir)
	}
	for _, p := range []*string{&o.Dir, &o.RunDir, &o.K8sBin, &o.NodeBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		*p = abs
	}
	if err := checkSocketPaths(o.RunDir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(o.Dir, stateFile)); err == nil {
		return nil, fmt.Errorf("cluster: %s exists: a cluster is up or was not torn down; run down first", filepath.Join(o.Dir, stateFile))
	}
	for _, tool := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip", "ipset", "docker-registry"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("cluster: %s not found (apt-get install containerd runc containernetworking-plugins iptables ipset docker-registry): %w", tool, err)
		}
	}
	if o.RegistryPort == 0 {
		o.RegistryPort = DefaultRegistryPort
	}
	if o.RegistryDir == "" {
		o.RegistryDir = DefaultRegistryDir()
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return nil, fmt.Errorf("cluster: CNI plugins missing (apt-get install containernetworking-plugins): %w", err)
	}
	if _, err := os.Stat("/sys/class/net/" + Bridge); err == nil {
		return nil, fmt.Errorf("cluster: bridge %s exists: an earlier cluster was not torn down", Bridge)
	}
	nodeIP := o.NodeIP
	if nodeIP == "" {
		ip, err := defaultRouteIP()
		if err != nil {
			return nil, err
		}
		nodeIP = ip
	}
	for _, d := range []string{o.Dir, o.RunDir} {
		if err := os.RemoveAll(d); err != nil {
			return nil, fmt.Errorf("cluster: wipe %s: %w", d, err)
		}
	}
	dirs := map[string]string{}
	for _, d := range []string{"pki", "etcd", "logs", "cni/net.d", "cni/ipam", "pod-logs", "containerd", "kubelet"} {
		base := o.Dir
		if d == "containerd" || d == "kubelet" {
			base = o.RunDir
		}
		dirs[d] = filepath.Join(base, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	st := &State{Dir: o.Dir, RunDir: o.RunDir, Sysctls: map[string]string{}, NodeBin: o.NodeBin,
		Containerd: filepath.Join(dirs["containerd"], "containerd.sock"),
		Registry:   fmt.Sprintf("127.0.0.1:%d", o.RegistryPort),
		Kubeconfig: filepath.Join(o.Dir, "admin.kubeconfig")}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			st.Created = append(st.Created, p)
		}
	}
	for _, k := range sysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			st.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			st.Netns = append(st.Netns, e.Name())
		}
	}
	st.NftTables = nftTables()
	st.IPSets = ipsets()
	if err := st.save(); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}

	// PKI and kubeconfigs.
	pk, err := newPKI(dirs["pki"])
	if err != nil {
		return st, err
	}
	ports, err := freePorts(7)
	if err != nil {
		return st, err
	}
	etcdPort, peerPort, apiPort, kubeletPort, cmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	leaves := []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			dns: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost", NodeName},
			ips: []net.IP{net.ParseIP("10.96.0.1"), net.ParseIP(nodeIP), net.ParseIP("127.0.0.1")}},
		{name: "admin", cn: "e2e-admin", orgs: []string{"system:masters"}, client: true},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true},
		{name: "controller-manager", cn: "system:kube-controller-manager", client: true},
		{name: "scheduler", cn: "system:kube-scheduler", client: true},
		{name: "kube-proxy", cn: "system:kube-proxy", client: true},
		{name: "kubelet-client", cn: "system:node:" + NodeName, orgs: []string{"system:nodes"}, client: true},
		{name: "kubelet", cn: NodeName, server: true, dns: []string{NodeName, "localhost"},
			ips: []net.IP{net.ParseIP(nodeIP), net.ParseIP("127.0.0.1")}},
	}
	for i, l := range leaves {
		if err := pk.issue(l, int64(i+2)); err != nil {
			return st, err
		}
	}
	if err := pk.serviceAccountKey(); err != nil {
		return st, err
	}
	pkiFile := func(n string) string { return filepath.Join(dirs["pki"], n) }
	server := fmt.Sprintf("https://%s:%d", nodeIP, apiPort)
	kc := map[string]string{}
	for _, id := range []string{"admin", "controller-manager", "scheduler", "kube-proxy", "kubelet-client"} {
		kc[id] = filepath.Join(o.Dir, id+".kubeconfig")
		if err := os.WriteFile(kc[id], []byte(kubeconfig(server, pkiFile("ca.crt"), pkiFile(id+".crt"), pkiFile(id+".key"))), 0o600); err != nil {
			return st, fmt.Errorf("cluster: %w", err)
		}
	}

	// Every process is watched from its start: a wait below fails at once,
	// with the exit status and the log's last lines, when one has exited.
	procs := &watchSet{}
	start := func(name, bin string, args ...string) error {
		p, w, err := startProc(o.Dir, name, bin, args...)
		if err != nil {
			return err
		}
		procs.add(w)
		st.Procs = append(st.Procs, p)
		logf("started %s (pid %d)", name, p.PID)
		return st.save()
	}
	waitFor := func(ctx context.Context, d time.Duration, what string, check func(context.Context) error) error {
		return waitFor(ctx, d, what, procs, check)
	}

	// etcd and the API server.
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	if err := start("etcd", filepath.Join(o.K8sBin, "etcd"), "--data-dir="+dirs["etcd"],
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync=true", "--quota-backend-bytes=4294967296"); err != nil {
		return st, err
	}
	if err := start("kube-apiserver", filepath.Join(o.K8sBin, "kube-apiserver"),
		"--etcd-servers="+etcdURL,
		// Pods reach the API server at 10.96.0.1, which kube-proxy sends to
		// the advertised address: it must be bound there, not on loopback.
		"--bind-address=0.0.0.0", fmt.Sprintf("--secure-port=%d", apiPort), "--advertise-address="+nodeIP,
		"--tls-cert-file="+pkiFile("apiserver.crt"), "--tls-private-key-file="+pkiFile("apiserver.key"),
		"--client-ca-file="+pkiFile("ca.crt"),
		"--service-account-key-file="+pkiFile("sa.pub"), "--service-account-signing-key-file="+pkiFile("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate="+pkiFile("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+pkiFile("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+pkiFile("ca.crt"),
		// logs/exec go to the node's InternalIP, where kubelet listens and
		// its serving certificate names: no reliance on the node name resolving.
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true", "--profiling=false"); err != nil {
		return st, err
	}
	cs, err := clientFor(kc["admin"])
	if err != nil {
		return st, err
	}
	if err := waitFor(ctx, 90*time.Second, "kube-apiserver /readyz", func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return st, err
	}
	logf("kube-apiserver ready at %s", server)

	// The image registry the node pulls task images from (pack build
	// pushes them), its storage in the machine cache.
	if err := os.MkdirAll(o.RegistryDir, 0o755); err != nil {
		return st, fmt.Errorf("cluster: registry storage: %w", err)
	}
	regCfg := filepath.Join(o.Dir, "registry.yml")
	if err := os.WriteFile(regCfg, []byte(registryConfig(st.Registry, o.RegistryDir)), 0o644); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	if err := start("registry", "docker-registry", "serve", regCfg); err != nil {
		return st, err
	}
	if err := waitFor(ctx, 30*time.Second, "the registry at "+st.Registry, func(ctx context.Context) error {
		return registryReady(ctx, st.Registry)
	}); err != nil {
		return st, err
	}
	logf("registry at %s (plain HTTP; storage %s)", st.Registry, o.RegistryDir)

	// containerd, its images, the CNI config.
	ctrDir := dirs["containerd"]
	certsDir := filepath.Join(ctrDir, "certs.d")
	if err := writeRegistryHosts(certsDir, st.Registry); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	cfg := containerdConfig(ctrDir, filepath.Join(o.Dir, "cni/net.d"), certsDir)
	if err := os.WriteFile(filepath.Join(ctrDir, "config.toml"), []byte(cfg), 0o644); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "cni/net.d/10-tolokaforge-e2e.conflist"), []byte(cniConfig(dirs["cni/ipam"])), 0o644); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	if err := start("containerd", "containerd", "--config="+filepath.Join(ctrDir, "config.toml")); err != nil {
		return st, err
	}
	if err := waitFor(ctx, 30*time.Second, "containerd socket", func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", st.Containerd, "version").Run()
	}); err != nil {
		return st, err
	}
	for _, img := range o.Images {
		out, err := exec.CommandContext(ctx, "ctr", "--address", st.Containerd, "-n", "k8s.io", "images", "import", "--no-unpack=false", img).CombinedOutput()
		if err != nil {
			return st, fmt.Errorf("cluster: ctr images import %s: %w: %s", img, err, out)
		}
		logf("imported %s", img)
	}

	// The rest of the control plane and the node.
	if err := start("kube-controller-manager", filepath.Join(o.NodeBin, "kube-controller-manager"),
		"--kubeconfig="+kc["controller-manager"], "--authentication-kubeconfig="+kc["controller-manager"],
		"--authorization-kubeconfig="+kc["controller-manager"],
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", cmPort),
		"--service-account-private-key-file="+pkiFile("sa.key"), "--root-ca-file="+pkiFile("ca.crt"),
		"--cluster-signing-cert-file="+pkiFile("ca.crt"), "--cluster-signing-key-file="+pkiFile("ca.key"),
		"--use-service-account-credentials=true", "--leader-elect=false",
		"--service-cluster-ip-range="+ServiceCIDR); err != nil {
		return st, err
	}
	if err := start("kube-scheduler", filepath.Join(o.NodeBin, "kube-scheduler"),
		"--kubeconfig="+kc["scheduler"], "--authentication-kubeconfig="+kc["scheduler"],
		"--authorization-kubeconfig="+kc["scheduler"],
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedPort), "--leader-elect=false"); err != nil {
		return st, err
	}
	kubeletCfg := filepath.Join(dirs["kubelet"], "config.yaml")
	if err := os.WriteFile(kubeletCfg, []byte(kubeletConfig(pkiFile, st.Containerd, dirs["pod-logs"], kubeletPort, DNSServiceIP)), 0o644); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	if err := start("kubelet", filepath.Join(o.NodeBin, "kubelet"), "--config="+kubeletCfg,
		"--kubeconfig="+kc["kubelet-client"], "--root-dir="+filepath.Join(dirs["kubelet"], "root"),
		"--hostname-override="+NodeName, "--node-ip="+nodeIP, "--v=1"); err != nil {
		return st, err
	}
	proxyCfg := filepath.Join(o.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(proxyCfg, []byte(kubeProxyConfig(kc["kube-proxy"], ports[6])), 0o644); err != nil {
		return st, fmt.Errorf("cluster: %w", err)
	}
	if err := start("kube-proxy", filepath.Join(o.NodeBin, "kube-proxy"), "--config="+proxyCfg); err != nil {
		return st, err
	}
	if err := waitFor(ctx, 120*time.Second, "node "+NodeName+" Ready", func(ctx context.Context) error {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("condition Ready=%s: %s", c.Status, c.Message)
			}
		}
		return errors.New("no Ready condition yet")
	}); err != nil {
		return st, err
	}
	// The default ServiceAccount exists before anything is applied: a pod
	// created before it is refused.
	if err := waitFor(ctx, 60*time.Second, "default ServiceAccount", func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return st, err
	}
	// kube-router's network policy controller (the firewall only: the
	// bridge plugin stays the pod network, kube-proxy the service proxy)
	// enforces NetworkPolicy. It reads the Node object at start, so it starts
	// once the node is registered. A test-cluster-only part: security flaws
	// are reported against kube-router v2.1.0 (hack/kuberouter).
	if err := start("kube-router", filepath.Join(o.NodeBin, "kube-router"),
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
		"--kubeconfig="+kc["admin"], "--hostname-override="+NodeName,
		"--service-cluster-ip-range="+ServiceCIDR, "--health-port=0", "--metrics-port=0"); err != nil {
		return st, err
	}
	if err := waitFor(ctx, 60*time.Second, "kube-router's network policy chains", func(ctx context.Context) error {
		return exec.CommandContext(ctx, "iptables", "-w", "-t", "filter", "-S", "KUBE-ROUTER-FORWARD").Run()
	}); err != nil {
		return st, err
	}
	logf("kube-router enforces NetworkPolicy")
	// CoreDNS as kube-system pods behind the kube-dns Service (dns.go), up
	// before anything else runs: kubelet's clusterDNS names the Service.
	if err := applyDNS(ctx, cs); err != nil {
		return st, err
	}
	if err := waitFor(ctx, 120*time.Second, "CoreDNS (image "+CoreDNSImage+") answering kubernetes.default.svc.cluster.local at "+DNSServiceIP, func(ctx context.Context) error {
		return lookupVia(ctx, DNSServiceIP, "kubernetes.default.svc.cluster.local", "10.96.0.1")
	}); err != nil {
		return st, err
	}
	logf("CoreDNS answers at %s:53", DNSServiceIP)
	logf("node %s Ready; KUBECONFIG=%s", NodeName, st.Kubeconfig)
	return st, st.save()
}

// lookupVia resolves host with the DNS server at ip:53 and wants the address.
func lookupVia(ctx context.Context, ip, host, want string) error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(ip, "53"))
	}}
	addrs, err := r.LookupHost(ctx, host)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if a == want {
			return nil
		}
	}
	return fmt.Errorf("%s resolved to %v, want %s", host, addrs, want)
}

func clientFor(kubeconfigPath string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		return nil, fmt.Errorf("cluster: kubeconfig %s: %w", kubeconfigPath, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: client: %w", err)
	}
	return cs, nil
}

// waitFor polls check until it passes, naming what it waited for and the
// last error when the time is up. A watched process that has exited ends
// the wait at once: nothing it was needed for will come.
func waitFor(ctx context.Context, d time.Duration, what string, procs *watchSet, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var last error
	for {
		if err := procs.exited(); err != nil {
			return fmt.Errorf("cluster: waiting for %s: %w", what, err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if err := procs.exited(); err != nil {
				return fmt.Errorf("cluster: waiting for %s: %w", what, err)
			}
			return fmt.Errorf("cluster: %s not reached in %s: %w", what, d, last)
		case <-procs.changed():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// watched is one started process, reaped by its own goroutine.
type watched struct {
	name, log string
	done      chan struct{}
	err       error // cmd.Wait's, once done is closed
}

// watchSet is the processes Up started so far.
type watchSet struct {
	mu    sync.Mutex
	procs []*watched
	ch    chan struct{} // closed when any process exits; renewed by add
}

func (s *watchSet) add(w *watched) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, w)
	go func() {
		<-w.done
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ch != nil {
			close(s.ch)
			s.ch = nil
		}
	}()
}

// changed is closed when a process exits after the call.
func (s *watchSet) changed() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// exited names the first process that has exited, its status and the last
// lines of its log; nil while all run.
func (s *watchSet) exited() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	procs := slices.Clone(s.procs)
	s.mu.Unlock()
	for _, w := range procs {
		select {
		case <-w.done:
		default:
			continue
		}
		status := "exit status 0"
		if w.err != nil {
			status = w.err.Error()
		}
		return fmt.Errorf("%s exited (%s) before the cluster was up; last lines of %s:\n%s", w.name, status, w.log, logTail(w.log, 20))
	}
	return nil
}

// logTail is the last n lines of the file, indented, or why it cannot be read.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var out bytes.Buffer
	for i, l := range lines {
		if i > 0 {
			out.WriteByte('\n')
		}
		out.WriteString("  " + l)
	}
	return out.String()
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "0.0.0.0:0")
		if err != nil {
			return nil, fmt.Errorf("cluster: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// defaultRouteIP is the source address of the IPv4 default route.
func defaultRouteIP() (string, error) {
	c, err := net.Dial("udp4", "192.0.2.255:9")
	if err != nil {
		return "", fmt.Errorf("cluster: no IPv4 default route to take the node IP from (set NodeIP): %w", err)
	}
	defer c.Close()
	ip := c.LocalAddr().(*net.UDPAddr).IP
	if ip.IsLoopback() {
		return "", fmt.Errorf("cluster: the default route's source %s is loopback; pods could not reach the API server (set NodeIP)", ip)
	}
	return ip.String(), nil
}

// startProc starts bin in its own process group, logging to Dir/logs/name.log;
// it outlives the caller (`cluster up` returns) and is stopped by Down. The
// watched's done closes when it exits while the caller still runs.
func startProc(dir, name, bin string, args ...string) (Proc, *watched, error) {
	logPath := filepath.Join(dir, "logs", name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Proc{}, nil, fmt.Errorf("cluster: %s log: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return Proc{}, nil, fmt.Errorf("cluster: start %s: %w", name, err)
	}
	p := Proc{Name: name, PID: cmd.Process.Pid, Start: procStart(cmd.Process.Pid)}
	w := &watched{name: name, log: logPath, done: make(chan struct{})}
	// Reap it if it dies while the caller still runs; never block on it.
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	return p, w, nil
}

// procStart is field 22 of /proc/PID/stat (start time in ticks), 0 when gone.
func procStart(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0
	}
	var v uint64
	fmt.Sscan(fields[19], &v)
	return v
}

// nftTables lists "family name" of every nftables table; nil without nft.
func nftTables() []string {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	var ts []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "table" {
			ts = append(ts, f[1]+" "+f[2])
		}
	}
	return ts
}

// ipsets lists the names of every ipset; nil without ipset.
func ipsets() []string {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}
