package podsim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"tolokaforge.io/operator/test/envtest/controlplane"
)

const (
	simImage      = "podsim-test/simserver:1"
	inprocImage   = "podsim-test/inproc:1"
	unmappedImage = "podsim-test/unmapped:1"
	killGrace     = 500 * time.Millisecond
)

var (
	testEnv  *controlplane.ControlPlane
	restCfg  *rest.Config
	cs       kubernetes.Interface
	sim      *Simulator
	stopSim  context.CancelFunc
	simDone  chan error
	inproc   = &inprocRegistry{ready: map[string]bool{}, info: map[string]PodInfo{}, cause: map[string]error{}}
	podLabel = map[string]string{"app.kubernetes.io/managed-by": "tolokaforge"}
)

func TestPodsimEnvtest(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: the envtest specs need kube-apiserver and etcd; " +
			"run hack/build-envtest.sh and export KUBEBUILDER_ASSETS=<repo>/bin/k8s")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "podsim envtest suite")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	var err error
	testEnv, err = controlplane.Start(controlplane.Options{})
	Expect(err).NotTo(HaveOccurred())
	restCfg = testEnv.Config
	cs, err = kubernetes.NewForConfig(restCfg)
	Expect(err).NotTo(HaveOccurred())

	sim, err = New(Config{
		Binaries:      map[string]string{simImage: simserverBin},
		InProcess:     map[string]InProcessFunc{"serve": inproc.serve, "exit": inproc.exit},
		ProbeInterval: 100 * time.Millisecond,
		KillGrace:     killGrace,
	}, restCfg, GinkgoLogr)
	Expect(err).NotTo(HaveOccurred())
	var ctx context.Context
	ctx, stopSim = context.WithCancel(context.Background())
	simDone = make(chan error, 1)
	go func() { simDone <- sim.Run(ctx) }()
})

var _ = AfterSuite(func() {
	if stopSim != nil {
		stopSim()
		Eventually(simDone).Should(Receive(BeNil()))
		Expect(sim.Running()).To(BeZero())
		Expect(sim.AddressesInUse()).To(BeZero())
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// inprocRegistry backs the in-process containers: readiness switches and
// what each one saw, keyed by pod name.
type inprocRegistry struct {
	mu    sync.Mutex
	ready map[string]bool
	info  map[string]PodInfo
	cause map[string]error
	args  sync.Map // pod name -> []string
}

func (r *inprocRegistry) setReady(pod string, ok bool) {
	r.mu.Lock()
	r.ready[pod] = ok
	r.mu.Unlock()
}

func (r *inprocRegistry) podInfo(pod string) (PodInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pi, ok := r.info[pod]
	return pi, ok
}

func (r *inprocRegistry) causeOf(pod string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cause[pod]
}

// serve is an in-process server: --listen ADDR, /health answers 200 once the
// test marks the pod ready (or at once with --ready).
func (r *inprocRegistry) serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "", "")
	readyNow := fs.Bool("ready", false, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pi, ok := PodFromContext(ctx)
	if !ok {
		return errors.New("no pod info in context")
	}
	r.mu.Lock()
	r.info[pi.Name] = pi
	if *readyNow {
		r.ready[pi.Name] = true
	}
	r.mu.Unlock()
	r.args.Store(pi.Name, args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		r.mu.Lock()
		ok := r.ready[pi.Name]
		r.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	r.mu.Lock()
	r.cause[pi.Name] = context.Cause(ctx)
	r.mu.Unlock()
	return srv.Close()
}

// exit returns at once with --code N.
func (r *inprocRegistry) exit(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("exit", flag.ContinueOnError)
	code := fs.Int("code", 0, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *code == 0 {
		return nil
	}
	return fmt.Errorf("exiting as asked: %w", codeErr(*code))
}

// --- helpers ---

func newNamespace() string {
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "podsim-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		// envtest has no namespace controller: delete pods explicitly and
		// wait for their containers, so each spec starts from zero.
		Expect(cs.CoreV1().Pods(ns.Name).DeleteCollection(context.Background(),
			metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}, metav1.ListOptions{})).To(Succeed())
		Eventually(sim.Running).Should(BeZero())
	})
	return ns.Name
}

type podOpt func(*corev1.Pod)

func withProbe(h corev1.ProbeHandler, failureThreshold int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, FailureThreshold: failureThreshold}
	}
}

func withEnv(env ...corev1.EnvVar) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, env...) }
}

func podIPEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}
}

func createPod(ns, name, image string, args []string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: podLabel},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: image, Args: args,
				Env: []corev1.EnvVar{podIPEnv()},
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	created, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return created
}

func getPod(ns, name string) func() (*corev1.Pod, error) {
	return func() (*corev1.Pod, error) {
		return cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func HavePhase(ph corev1.PodPhase) OmegaMatcher {
	return HaveField("Status.Phase", ph)
}

func BeReady(ready bool) OmegaMatcher {
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	return WithTransform(func(p *corev1.Pod) corev1.ConditionStatus { return condition(p, corev1.PodReady) }, Equal(want))
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if len(p.Status.ContainerStatuses) == 0 {
		return nil
	}
	return p.Status.ContainerStatuses[0].State.Terminated
}

// runningPod waits for Running with an address and returns the pod.
func runningPod(ns, name string) *corev1.Pod {
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		p, err := getPod(ns, name)()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p).To(HavePhase(corev1.PodRunning))
		g.Expect(p.Status.PodIP).NotTo(BeEmpty())
		pod = p
	}).Should(Succeed())
	return pod
}

type serverInfo struct {
	PID  int      `json:"pid"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
}

func fetchInfo(addr string) serverInfo {
	var info serverInfo
	Eventually(func() error {
		resp, err := http.Get("http://" + addr + "/info")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		return json.NewDecoder(resp.Body).Decode(&info)
	}).Should(Succeed())
	return info
}

func post(addr, path string) {
	resp, err := http.Post("http://"+addr+path, "text/plain", nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Body.Close()).To(Succeed())
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

func healthStatus(addr string) (int, error) {
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
