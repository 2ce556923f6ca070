// Package kueueenv runs the real Kueue controller (sigs.k8s.io/kueue v0.17.0,
// built by hack/build-kueue.sh into bin/kueue) as a subprocess against an
// envtest control plane: its CRDs and its webhooks (admission and conversion)
// installed, and Trial registered as an external framework. No stand-in: what
// admits, queues and preempts in the Kueue suites is Kueue.
//
// Outside a pod, three things a cluster gives Kueue are done here
// (../shared/design/kueue.md): its webhook certificates, which it writes into
// a Secret for a kubelet to mount, are copied into its certDir; its webhook
// Service gets an EndpointSlice with this machine's address (the control plane
// must run with --enable-aggregator-routing=true, APIServerFlags, so the
// apiserver calls endpoints instead of a ClusterIP nobody routes); and the
// conversion CRDs carry their webhook clientConfig (hack/build-kueue.sh).
// Kueue without its internal certificate management would need
// /etc/kueue/metrics/certs (a path compiled in), which a test may not write.
//
// Test code only.
//
// Imports: api/v1alpha1, the standard library, k8s.io/api,
// k8s.io/apiextensions-apiserver, k8s.io/apimachinery, k8s.io/client-go,
// k8s.io/utils, sigs.k8s.io/controller-runtime, sigs.k8s.io/kueue and
// sigs.k8s.io/yaml.
package kueueenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// Namespace is Kueue's own namespace.
const Namespace = "kueue-system"

// TrialFramework is the Trial's name in Kueue's externalFrameworks.
var TrialFramework = "Trial." + evalv1.GroupVersion.Version + "." + evalv1.GroupVersion.Group

// AssetsDir is where hack/build-kueue.sh put Kueue: $KUEUE_ASSETS, else
// bin/kueue beside the go.mod above the working directory.
func AssetsDir() (string, error) {
	if d := os.Getenv("KUEUE_ASSETS"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("kueueenv: working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "bin", "kueue"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("kueueenv: no go.mod above %s", wd)
		}
	}
}

// Missing says why Kueue cannot run here, or "".
func Missing() string {
	dir, err := AssetsDir()
	if err != nil {
		return err.Error()
	}
	for _, f := range []string{"kueue", "crds", "webhooks.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fmt.Sprintf("kueue assets missing (%v): run hack/build-kueue.sh (make test does), or set KUEUE_ASSETS", err)
		}
	}
	return ""
}

// Options shape a Kueue.
type Options struct {
	// ExternalFrameworks are integrations.externalFrameworks (default: the Trial).
	ExternalFrameworks []string
	// MultiKueueFrameworks are multiKueue.externalFrameworks: the kinds
	// MultiKueue's generic adapter dispatches to worker clusters (default:
	// the Trial).
	MultiKueueFrameworks []string
	// WaitForPodsReady turns on Kueue's waitForPodsReady with this timeout:
	// an admitted Workload whose PodsReady is not True within it is
	// evicted (0: off, Kueue's default).
	WaitForPodsReady time.Duration
	// LogTo receives Kueue's log (default: a file in its work dir, kept
	// when Stop is called with keepLog).
	LogTo io.Writer
	// StartTimeout bounds waiting for readiness (default 90s).
	StartTimeout time.Duration
}

// Kueue is a running Kueue process.
type Kueue struct {
	// Work holds its config, kubeconfig, certificates and log.
	Work string
	// LogPath is its log when Options.LogTo was nil.
	LogPath string
	cmd     *exec.Cmd
	done    chan error
}

// APIServerFlags are the kube-apiserver flags Kueue's webhooks need here.
var APIServerFlags = map[string]string{"enable-aggregator-routing": "true"}

// Names of Kueue's own install (config/default), which its certificate
// rotator looks for.
const (
	serviceName = "kueue-webhook-service"
	secretName  = "kueue-webhook-server-cert"
)

// Start installs Kueue's CRDs and webhooks into the control plane env runs
// (its admin config cfg; started with APIServerFlags) and starts Kueue until
// Stop.
func Start(ctx context.Context, env *crenvtest.Environment, cfg *rest.Config, o Options) (_ *Kueue, err error) {
	if why := Missing(); why != "" {
		return nil, errors.New(why)
	}
	assets, _ := AssetsDir()
	if len(o.ExternalFrameworks) == 0 {
		o.ExternalFrameworks = []string{TrialFramework}
	}
	if len(o.MultiKueueFrameworks) == 0 {
		o.MultiKueueFrameworks = []string{TrialFramework}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	k := &Kueue{done: make(chan error, 1)}
	if k.Work, err = os.MkdirTemp("", "kueueenv-"); err != nil {
		return nil, fmt.Errorf("kueueenv: work dir: %w", err)
	}
	stopCopy := func() {}
	defer func() {
		if err != nil {
			stopCopy()
			_ = k.Stop(true)
		}
	}()
	certDir := filepath.Join(k.Work, "certs")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("kueueenv: cert dir: %w", err)
	}
	hostIP, err := hostAddress()
	if err != nil {
		return nil, err
	}
	webhookPort, err := freePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := freePort()
	if err != nil {
		return nil, err
	}

	crds, err := kueueCRDs(filepath.Join(assets, "crds"))
	if err != nil {
		return nil, err
	}
	if _, err := crenvtest.InstallCRDs(cfg, crenvtest.CRDInstallOptions{CRDs: crds, MaxTime: o.StartTimeout}); err != nil {
		return nil, fmt.Errorf("kueueenv: install Kueue's CRDs: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("kueueenv: client: %w", err)
	}
	muts, vals, err := kueueWebhooks(filepath.Join(assets, "webhooks.yaml"))
	if err != nil {
		return nil, err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		// The rotator fills it; it must exist first.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: secretName}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: serviceName},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
				Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(webhookPort)), Protocol: corev1.ProtocolTCP}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: serviceName + "-local",
				Labels: map[string]string{discoveryv1.LabelServiceName: serviceName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{hostIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(webhookPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		},
	}
	for _, m := range muts {
		objs = append(objs, m)
	}
	for _, v := range vals {
		objs = append(objs, v)
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("kueueenv: create %T %s: %w", obj, obj.GetName(), err)
		}
	}

	user, err := env.AddUser(crenvtest.User{Name: "kueue", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return nil, fmt.Errorf("kueueenv: user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kueueenv: kubeconfig: %w", err)
	}
	config := kueueConfig(hostIP, webhookPort, certDir, healthPort, o.ExternalFrameworks, o.MultiKueueFrameworks, o.WaitForPodsReady)
	files := map[string][]byte{"kubeconfig": kubeconfig, "config.yaml": config}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(k.Work, name), b, 0o600); err != nil {
			return nil, fmt.Errorf("kueueenv: write %s: %w", name, err)
		}
	}

	// What a kubelet would do: mount the Secret Kueue writes into certDir.
	copyCtx, cancelCopy := context.WithCancel(ctx)
	copied := make(chan error, 1)
	stopCopy = cancelCopy
	go func() { copied <- copySecret(copyCtx, c, certDir) }()

	log := o.LogTo
	if log == nil {
		k.LogPath = filepath.Join(k.Work, "kueue.log")
		f, err := os.Create(k.LogPath)
		if err != nil {
			return nil, fmt.Errorf("kueueenv: log: %w", err)
		}
		defer f.Close() // the child keeps its own descriptor
		log = f
	}
	k.cmd = exec.Command(filepath.Join(assets, "kueue"),
		"--config="+filepath.Join(k.Work, "config.yaml"),
		"--kubeconfig="+filepath.Join(k.Work, "kubeconfig"),
		// The on-demand visibility API server binds a port of its own and
		// is not what the suites look at.
		"--feature-gates=VisibilityOnDemand=false",
		"--zap-log-level=2",
	)
	k.cmd.Stdout, k.cmd.Stderr = log, log
	// Its own process group: Stop signals it alone, by pid; and it dies
	// with the test process.
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("kueueenv: start %s: %w", k.cmd.Path, err)
	}
	go func() { k.done <- k.cmd.Wait() }()

	if err := k.waitReady(ctx, healthPort, o.StartTimeout); err != nil {
		return nil, err
	}
	cancelCopy()
	if err := <-copied; err != nil {
		return nil, err
	}
	// Ready means its webhook server runs; the apiserver trusts it once the
	// rotator injected its CA. Wait until a dry-run goes through them.
	if err := waitWebhooks(ctx, c, o.StartTimeout); err != nil {
		return nil, fmt.Errorf("%w; kueue log:\n%s", err, k.LogTail(40))
	}
	return k, nil
}

// copySecret copies Kueue's webhook certificate Secret into dir as soon as
// it holds one (and again when it changes) until ctx ends.
func copySecret(ctx context.Context, c client.Client, dir string) error {
	var last string
	for {
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: secretName}, s)
		if err == nil && len(s.Data["tls.crt"]) > 0 && len(s.Data["tls.key"]) > 0 && string(s.Data["tls.crt"]) != last {
			for name, b := range s.Data {
				tmp := filepath.Join(dir, "."+name)
				if err := os.WriteFile(tmp, b, 0o600); err != nil {
					return fmt.Errorf("kueueenv: write %s: %w", name, err)
				}
				if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
					return fmt.Errorf("kueueenv: %w", err)
				}
			}
			last = string(s.Data["tls.crt"])
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitWebhooks waits until Kueue's webhooks answer the apiserver: a dry-run
// create of a ResourceFlavor passes its mutating and validating webhooks.
func waitWebhooks(ctx context.Context, c client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rf := &unstructured.Unstructured{}
		rf.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		rf.SetKind("ResourceFlavor")
		rf.SetName("kueueenv-probe")
		err := c.Create(ctx, rf, client.DryRunAll)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kueueenv: Kueue's webhooks do not answer after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kueueenv: waiting for Kueue's webhooks: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitReady polls Kueue's readiness probe; a process that exits first is an
// error quoting its log's tail.
func (k *Kueue) waitReady(ctx context.Context, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	for {
		select {
		case err := <-k.done:
			k.done <- err
			return fmt.Errorf("kueueenv: kueue exited before it was ready (%v); log:\n%s", err, k.LogTail(40))
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kueueenv: kueue not ready after %s; log:\n%s", timeout, k.LogTail(40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kueueenv: waiting for kueue: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// LogTail is the last n lines of Kueue's log file ("" when logging elsewhere).
func (k *Kueue) LogTail(n int) string {
	if k.LogPath == "" {
		return ""
	}
	b, err := os.ReadFile(k.LogPath)
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop stops Kueue (SIGTERM to its pid, SIGKILL after 10s) and removes its
// work dir unless keep.
func (k *Kueue) Stop(keep bool) error {
	var errs []error
	if k.cmd != nil && k.cmd.Process != nil {
		_ = k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(10 * time.Second):
			_ = k.cmd.Process.Kill()
			<-k.done
		}
		k.cmd = nil
	}
	if !keep && k.Work != "" {
		errs = append(errs, os.RemoveAll(k.Work))
	}
	return errors.Join(errs...)
}

// kueueConfig is Kueue's Configuration: no leader election, its internal
// certificate management for the Service above (certDir filled from its
// Secret), the webhook on this machine's address, the probes on a free
// loopback port, metrics off, and the Trial as an external framework, which
// MultiKueue may dispatch.
func kueueConfig(host string, webhookPort int, certDir string, healthPort int, external, multiKueue []string, podsReady time.Duration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
webhook:
  host: %s
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: %s
  webhookSecretName: %s
integrations:
  frameworks: ["batch/job"]
  externalFrameworks:
`, Namespace, healthPort, host, webhookPort, certDir, serviceName, secretName)
	for _, f := range external {
		fmt.Fprintf(&b, "  - %q\n", f)
	}
	b.WriteString("multiKueue:\n  externalFrameworks:\n")
	for _, f := range multiKueue {
		fmt.Fprintf(&b, "  - name: %q\n", f)
	}
	if podsReady > 0 {
		fmt.Fprintf(&b, "waitForPodsReady:\n  timeout: %s\n  blockAdmission: false\n", podsReady)
	}
	return []byte(b.String())
}

// kueueWebhooks reads Kueue's webhook configurations, keeping only the
// webhooks of Kueue's own kinds (kueue.x-k8s.io): the other integrations'
// (pods, Deployments, Kubeflow, Ray...) are not enabled here, and a pod
// webhook would stand between the suites and every pod.
func kueueWebhooks(path string) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	docs, err := readDocs(path)
	if err != nil {
		return nil, nil, err
	}
	ours := func(rules []admissionv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				if g == "kueue.x-k8s.io" {
					return true
				}
			}
		}
		return false
	}
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(d, &tm); err != nil {
			return nil, nil, fmt.Errorf("kueueenv: %s: %w", path, err)
		}
		switch tm.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(d, m); err != nil {
				return nil, nil, fmt.Errorf("kueueenv: %s: %w", path, err)
			}
			m.Name = "kueue-" + m.Name
			kept := m.Webhooks[:0]
			for _, w := range m.Webhooks {
				if ours(w.Rules) {
					toService(&w.ClientConfig)
					kept = append(kept, w)
				}
			}
			m.Webhooks = kept
			muts = append(muts, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(d, v); err != nil {
				return nil, nil, fmt.Errorf("kueueenv: %s: %w", path, err)
			}
			v.Name = "kueue-" + v.Name
			kept := v.Webhooks[:0]
			for _, w := range v.Webhooks {
				if ours(w.Rules) {
					toService(&w.ClientConfig)
					kept = append(kept, w)
				}
			}
			v.Webhooks = kept
			vals = append(vals, v)
		}
	}
	if len(muts) == 0 || len(vals) == 0 {
		return nil, nil, fmt.Errorf("kueueenv: %s has no Kueue webhook configurations", path)
	}
	return muts, vals, nil
}

// toService points a webhook at Kueue's Service as its install names it.
func toService(cc *admissionv1.WebhookClientConfig) {
	if cc.Service != nil {
		cc.Service.Namespace, cc.Service.Name = Namespace, serviceName
	}
}

// kueueCRDs reads Kueue's CRDs (conversion webhooks already pointed at its
// Service by hack/build-kueue.sh).
func kueueCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("kueueenv: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("kueueenv: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, fmt.Errorf("kueueenv: %s: %w", e.Name(), err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kueueenv: no CRDs in %s", dir)
	}
	return out, nil
}

// hostAddress is this machine's first IPv4 address outside loopback: the
// apiserver refuses loopback endpoints, and reaches Kueue's webhook there.
func hostAddress() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("kueueenv: interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("kueueenv: no IPv4 address outside loopback for Kueue's webhook endpoint")
}

func readDocs(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kueueenv: %w", err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("kueueenv: %s: %w", path, err)
		}
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("kueueenv: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
