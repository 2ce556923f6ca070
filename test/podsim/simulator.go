package podsim

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

var (
	// errUnknownPod means the simulator is not running that pod.
	errUnknownPod = errors.New("podsim: pod is not simulated")
	// errNotRunning means the pod's container has not started or has exited.
	errNotRunning = errors.New("podsim: container is not running")
)

// configRetry is how often a pod stuck on a missing Secret or ConfigMap is
// retried, like kubelet's backoff but short.
const configRetry = time.Second

// Simulator plays kubelet for the pods matching Config.Selector.
type Simulator struct {
	cfg  Config
	sel  labels.Selector
	cs   kubernetes.Interface
	log  logr.Logger
	pool *ipPool

	queue   workqueue.TypedRateLimitingInterface[string]
	running atomic.Int64
	writes  atomic.Int64

	mu      sync.Mutex
	pods    map[string]*podState // by namespace/name
	runCtx  context.Context      // parent of containers and probers
	started bool

	bg sync.WaitGroup // exit watchers, probers and teardowns
}

// podState is one pod the simulator owns. Fields below mu are guarded by
// Simulator.mu.
type podState struct {
	key, namespace, name string
	uid                  types.UID
	log                  logr.Logger
	grace                time.Duration

	ip       netip.Addr
	released bool

	snap        snapshot
	startedWall time.Time
	hasProbe    bool
	retry       bool // waiting on a config error that may resolve
	retryAt     time.Time
	container   *runningContainer
	exitHandled chan struct{} // closed after onExit has recorded the exit
	stopProbes  context.CancelFunc
	workDir     string
	volDir      string // the container's Secret volumes (mountSecrets)
	deleting    bool
}

// New connects to the API server behind restCfg. The rate limit is raised
// when restCfg leaves it unset (see Config.ClientQPS).
func New(cfg Config, restCfg *rest.Config, log logr.Logger) (*Simulator, error) {
	if restCfg == nil {
		return nil, errors.New("podsim: rest config is nil")
	}
	full, _, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(restCfg)
	if rc.QPS == 0 && rc.RateLimiter == nil {
		rc.QPS, rc.Burst = full.ClientQPS, full.ClientBurst
	}
	if rc.ContentType == "" {
		// As a kubelet talks to the API server (--kube-api-content-type):
		// pods in protobuf, not JSON, both ways, watches included.
		rc.ContentType = runtime.ContentTypeProtobuf
		rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("podsim: build clientset: %w", err)
	}
	return newForClient(cfg, cs, log)
}

// newForClient uses an existing clientset.
func newForClient(cfg Config, cs kubernetes.Interface, log logr.Logger) (*Simulator, error) {
	cfg, sel, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	pool, err := newIPPool(cfg.FirstIP, cfg.LastIP)
	if err != nil {
		return nil, fmt.Errorf("podsim config: %w", err)
	}
	return &Simulator{
		cfg:  cfg,
		sel:  sel,
		cs:   cs,
		log:  log,
		pool: pool,
		pods: map[string]*podState{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: ""}),
	}, nil
}

// Run simulates pods until ctx is done, then stops every container (SIGTERM,
// then SIGKILL after KillGrace) and returns. Pod statuses are not touched on
// the way out, as when a node disappears.
func (s *Simulator) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("podsim: Run called twice")
	}
	s.started = true
	// Containers outlive ctx so that shutdown can stop them gracefully.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	s.runCtx = runCtx
	s.mu.Unlock()
	defer cancelRun()

	pods := s.cs.CoreV1().Pods(s.cfg.Namespace)
	sel := s.sel.String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("podsim: add event handler: %w", err)
	}
	infDone := make(chan struct{})
	go func() { defer close(infDone); inf.RunWithContext(ctx) }()

	var workers sync.WaitGroup
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		s.log.Info("pod simulator running", "selector", sel, "namespace", s.cfg.Namespace)
		for range s.cfg.Workers {
			workers.Go(func() { s.work(ctx, inf.GetIndexer()) })
		}
	}
	<-ctx.Done()
	s.queue.ShutDown()
	workers.Wait()
	<-infDone
	s.stopAll()
	s.bg.Wait()
	s.log.Info("pod simulator stopped")
	return nil
}

func (s *Simulator) work(ctx context.Context, store cache.Indexer) {
	for {
		key, quit := s.queue.Get()
		if quit {
			return
		}
		after, err := s.reconcile(ctx, store, key)
		switch {
		case errors.Is(err, errConflict):
			s.queue.AddRateLimited(key)
		case err != nil:
			if ctx.Err() == nil {
				s.log.Error(err, "reconcile pod", "pod", key)
			}
			s.queue.AddRateLimited(key)
		case after > 0:
			s.queue.Forget(key)
			s.queue.AddAfter(key, after)
		default:
			s.queue.Forget(key)
		}
		s.queue.Done(key)
	}
}

// errConflict is an optimistic-concurrency miss: the cache was behind our own
// write. It is retried without logging.
var errConflict = errors.New("podsim: stale pod in cache")

// reconcile moves one pod towards what kubelet would do and returns a delay
// after which it wants to look again.
func (s *Simulator) reconcile(ctx context.Context, store cache.Indexer, key string) (time.Duration, error) {
	obj, exists, err := store.GetByKey(key)
	if err != nil {
		return 0, fmt.Errorf("get %s from cache: %w", key, err)
	}
	s.mu.Lock()
	st := s.pods[key]
	s.mu.Unlock()
	if !exists {
		if st != nil {
			st.log.Info("pod deleted; stopping container")
			s.forget(st)
		}
		return 0, nil
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0, fmt.Errorf("cache object %s is %T, not a pod", key, obj)
	}
	if st != nil && st.uid != pod.UID {
		st.log.Info("pod replaced by a new one with the same name; stopping the old container")
		s.forget(st)
		st = nil
	}
	if pod.DeletionTimestamp != nil {
		s.handleDeletion(pod, st)
		return 0, nil
	}
	if st == nil {
		switch {
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			return 0, nil
		case pod.Status.Phase == corev1.PodRunning || pod.Status.PodIP != "":
			// Started by an earlier simulator whose processes died with it.
			return 0, s.markLost(ctx, pod)
		}
		if st, err = s.admit(pod); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	needStart := st.container == nil && st.snap.phase == containerWaiting && (st.startedWall.IsZero() || st.retry && !time.Now().Before(st.retryAt))
	s.mu.Unlock()
	if needStart {
		if err := s.start(ctx, pod, st); err != nil {
			return 0, err
		}
	}
	return s.syncStatus(ctx, pod, st)
}

func (s *Simulator) admit(pod *corev1.Pod) (*podState, error) {
	key := pod.Namespace + "/" + pod.Name
	ip, err := s.pool.allocate()
	if err != nil {
		return nil, fmt.Errorf("admit pod %s: %w", key, err)
	}
	grace := s.cfg.KillGrace
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = min(grace, time.Duration(*g)*time.Second)
	}
	st := &podState{
		key: key, namespace: pod.Namespace, name: pod.Name, uid: pod.UID,
		log:   s.log.WithValues("pod", key),
		grace: grace,
		ip:    ip,
		snap: snapshot{
			phase:       containerWaiting,
			podIP:       ip.String(),
			containerID: "podsim://" + string(pod.UID),
			waitReason:  "ContainerCreating",
		},
		exitHandled: make(chan struct{}),
	}
	s.mu.Lock()
	s.pods[key] = st
	s.mu.Unlock()
	return st, nil
}

// configFailed is the kubelet's answer to a container it cannot set up (a
// missing Secret or key, a volume it cannot mount): the pod waits in
// CreateContainerConfigError and is retried. Any other err is an API failure,
// returned for the caller to retry.
func (s *Simulator) configFailed(st *podState, now time.Time, what string, err error) error {
	var ce *configError
	if !errors.As(err, &ce) {
		return fmt.Errorf("start pod %s: %w", st.key, err)
	}
	st.log.Info(what, "error", err.Error())
	s.mu.Lock()
	st.startedWall = now
	st.snap.waitReason, st.snap.waitMessage = "CreateContainerConfigError", err.Error()
	st.retry, st.retryAt = true, now.Add(configRetry)
	s.mu.Unlock()
	return nil
}

// start resolves the container's environment and launches it. Problems that
// kubelet reports in the pod (missing Secret, unmapped image, exec failure)
// become status, not errors; only API failures are returned for retry.
func (s *Simulator) start(ctx context.Context, pod *corev1.Pod, st *podState) error {
	c := &pod.Spec.Containers[0]
	if len(pod.Spec.Containers) > 1 {
		st.log.Info("pod has several containers; only the first is simulated", "container", c.Name)
	}
	now := time.Now()
	env, vars, err := resolveEnv(ctx, s.cs, pod, c, st.ip.String())
	if err != nil {
		return s.configFailed(st, now, "container config error", err)
	}
	argv := containerArgv(c, vars)
	volDir, mounts, err := s.mountVolumes(ctx, pod, c)
	if err != nil {
		return s.configFailed(st, now, "container volume error", err)
	}
	argv = rewriteMounts(argv, mounts)
	sub := ""
	if len(argv) > 0 {
		sub = argv[0]
	}
	fn := s.cfg.InProcess[sub]
	bin := s.cfg.Binaries[c.Image]
	if bin == "" {
		bin = s.cfg.DefaultBinary
	}

	var rc *runningContainer
	var workDir string
	switch {
	case fn != nil:
		info := PodInfo{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), IP: st.ip.String(), Env: vars}
		s.mu.Lock()
		parent := s.runCtx
		s.mu.Unlock()
		rc = startInProcess(withPodInfo(parent, info), fn, argv[1:])
		st.log.Info("container started in-process", "ip", info.IP, "subcommand", sub)
	case bin != "":
		workDir, err = os.MkdirTemp(s.cfg.WorkDir, "podsim-"+pod.Namespace+"-"+pod.Name+"-")
		if err != nil {
			return fmt.Errorf("start pod %s: work dir: %w", st.key, err)
		}
		rc, err = startProcess(processSpec{
			binary:         bin,
			args:           argv,
			env:            s.processEnv(pod, workDir, env),
			dir:            workDir,
			log:            st.log,
			fallbackToLogs: c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError,
		})
		if err != nil {
			_ = os.RemoveAll(workDir)
			_ = os.RemoveAll(volDir)
			st.log.Error(err, "container failed to start")
			s.mu.Lock()
			st.startedWall = now
			st.snap.phase = containerTerminated
			st.snap.startedAt = metav1.NewTime(now).Rfc3339Copy()
			st.snap.finishedAt = st.snap.startedAt
			st.snap.exit = exitStatus{code: 128, reason: "StartError", message: err.Error()}
			s.mu.Unlock()
			close(st.exitHandled)
			s.releaseIP(st)
			return nil
		}
		st.log.Info("container started", "ip", st.ip.String(), "binary", bin, "pid", rc.pid)
	default:
		_ = os.RemoveAll(volDir)
		msg := fmt.Sprintf("podsim: no binary mapped for image %q and no in-process function for subcommand %q", c.Image, sub)
		st.log.Info("cannot start container", "reason", msg)
		s.mu.Lock()
		st.startedWall = now
		st.snap.waitReason, st.snap.waitMessage = "ErrImagePull", msg
		st.retry = false
		s.mu.Unlock()
		return nil
	}

	s.running.Add(1)
	probeCtx, stopProbes := context.WithCancel(context.Background())
	s.mu.Lock()
	st.container = rc
	st.workDir = workDir
	st.volDir = volDir
	st.startedWall = now
	st.stopProbes = stopProbes
	st.hasProbe = c.ReadinessProbe != nil
	st.snap.phase = containerRunning
	st.snap.startedAt = metav1.NewTime(now).Rfc3339Copy()
	st.snap.waitReason, st.snap.waitMessage = "", ""
	st.snap.ready = c.ReadinessProbe == nil
	s.mu.Unlock()

	if c.ReadinessProbe != nil {
		p := newProber(c.ReadinessProbe, st.ip.String(), c.Ports)
		sched := scheduleFor(c.ReadinessProbe, s.cfg.ProbeInterval)
		s.bg.Go(func() { s.runProbes(probeCtx, st, p, sched) })
	}
	s.bg.Go(func() {
		<-rc.done
		s.onExit(st)
	})
	return nil
}

// containerArgv is command[1:]+args with $(VAR) expanded: command[0] names
// the image's executable, which the simulator replaces with the mapped binary.
func containerArgv(c *corev1.Container, vars map[string]string) []string {
	var raw []string
	if len(c.Command) > 0 {
		raw = append(raw, c.Command[1:]...)
	}
	raw = append(raw, c.Args...)
	out := make([]string, len(raw))
	for i, a := range raw {
		out[i] = expand(a, vars)
	}
	return out
}

// processEnv is a minimal container environment: no test-process variables
// leak in except ExtraEnv, so a subprocess sees what a pod would.
func (s *Simulator) processEnv(pod *corev1.Pod, workDir string, env []envVar) []string {
	out := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + workDir,
		"HOSTNAME=" + pod.Name,
	}
	out = append(out, s.cfg.ExtraEnv...)
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

func (s *Simulator) onExit(st *podState) {
	ex := st.container.exitStatus()
	s.running.Add(-1)
	s.mu.Lock()
	st.snap.phase = containerTerminated
	st.snap.exit = ex
	st.snap.ready = false
	st.snap.finishedAt = metav1.Now().Rfc3339Copy()
	st.stopProbes()
	current := s.pods[st.key] == st
	s.mu.Unlock()
	s.releaseIP(st)
	close(st.exitHandled)
	st.log.Info("container exited", "exitCode", ex.code, "reason", ex.reason)
	if current {
		s.queue.Add(st.key)
	}
}

func (s *Simulator) releaseIP(st *podState) {
	s.mu.Lock()
	release := !st.released && st.ip.IsValid()
	st.released = true
	s.mu.Unlock()
	if release {
		s.pool.release(st.ip)
	}
}

// forget detaches a pod that is gone and stops its container in the
// background so the worker is not blocked for the kill grace period.
func (s *Simulator) forget(st *podState) {
	s.mu.Lock()
	if s.pods[st.key] == st {
		delete(s.pods, st.key)
	}
	s.mu.Unlock()
	s.bg.Go(func() { s.teardown(st, st.grace) })
}

func (s *Simulator) teardown(st *podState, grace time.Duration) {
	s.mu.Lock()
	c, stop, dir, volDir := st.container, st.stopProbes, st.workDir, st.volDir
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	if c != nil {
		c.stop(grace, s.abandonAfter(), st.log)
		<-st.exitHandled
	}
	s.releaseIP(st)
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	if volDir != "" {
		_ = os.RemoveAll(volDir)
	}
}

// handleDeletion does kubelet's part of graceful deletion: stop the
// container, then remove the pod object for good.
func (s *Simulator) handleDeletion(pod *corev1.Pod, st *podState) {
	s.mu.Lock()
	if st == nil {
		st = &podState{
			key: pod.Namespace + "/" + pod.Name, namespace: pod.Namespace, name: pod.Name, uid: pod.UID,
			log: s.log.WithValues("pod", pod.Namespace+"/"+pod.Name), released: true,
		}
		s.pods[st.key] = st
	}
	if st.deleting {
		s.mu.Unlock()
		return
	}
	st.deleting = true
	ctx := s.runCtx
	s.mu.Unlock()

	grace := st.grace
	// The API server deletes an unbound pod at once with grace 0; only a
	// bound pod's deletion grace reflects what the deleter asked for.
	if g := pod.DeletionGracePeriodSeconds; g != nil && pod.Spec.NodeName != "" {
		grace = min(grace, time.Duration(*g)*time.Second)
	}
	st.log.Info("pod terminating; stopping container", "grace", grace)
	s.bg.Go(func() {
		s.teardown(st, grace)
		err := s.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64(0)),
			Preconditions:      &metav1.Preconditions{UID: &st.uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			st.log.Error(err, "force-delete terminated pod")
		}
	})
}

// markLost reports a pod that claims to be running but has no container
// here, the way kubelet reports a container it cannot find.
func (s *Simulator) markLost(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now().Rfc3339Copy()
	snap := snapshot{
		phase:       containerTerminated,
		podIP:       pod.Status.PodIP,
		containerID: "podsim://" + string(pod.UID),
		exit: exitStatus{code: 137, reason: "ContainerStatusUnknown",
			message: "The container could not be located when the pod was terminated (pod simulator restarted)"},
		finishedAt: now,
	}
	if pod.Status.StartTime != nil {
		snap.startedAt = *pod.Status.StartTime
	}
	s.log.Info("pod has no container here; marking it failed", "pod", pod.Namespace+"/"+pod.Name)
	return s.writeStatus(ctx, pod, buildStatus(pod, snap, now))
}

func (s *Simulator) syncStatus(ctx context.Context, pod *corev1.Pod, st *podState) (time.Duration, error) {
	s.mu.Lock()
	snap := st.snap
	holdRunning := snap.phase == containerRunning && st.hasProbe && !snap.ready
	started := st.startedWall
	retryIn := time.Duration(0)
	if snap.phase == containerWaiting && st.retry {
		retryIn = max(time.Until(st.retryAt), time.Millisecond)
	}
	s.mu.Unlock()
	// Hold a not-yet-ready Running report for up to one probe interval: a
	// pod that turns Ready quickly then costs one write instead of two.
	if holdRunning {
		if wait := s.cfg.ProbeInterval - time.Since(started); wait > 0 && pod.Status.Phase != corev1.PodRunning {
			return wait, nil
		}
	}
	desired := buildStatus(pod, snap, metav1.Now().Rfc3339Copy())
	if equality.Semantic.DeepEqual(pod.Status, desired) {
		return retryIn, nil
	}
	return retryIn, s.writeStatus(ctx, pod, desired)
}

func (s *Simulator) writeStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) error {
	upd := pod.DeepCopy()
	upd.Status = status
	_, err := s.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: "podsim"})
	switch {
	case err == nil:
		s.writes.Add(1)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return errConflict
	default:
		return fmt.Errorf("update status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}

func (s *Simulator) runProbes(ctx context.Context, st *podState, p *prober, sched probeSchedule) {
	r := readiness{sched: sched}
	step := firstProbeStep
	timer := time.NewTimer(sched.initialDelay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		err := p.check(ctx)
		if ctx.Err() != nil {
			return
		}
		changed := r.observe(err == nil)
		if changed {
			s.mu.Lock()
			live := st.snap.phase == containerRunning
			if live {
				st.snap.ready = r.ready
			}
			current := live && s.pods[st.key] == st
			s.mu.Unlock()
			st.log.V(1).Info("readiness changed", "ready", r.ready, "probeError", errString(err))
			if current {
				s.queue.Add(st.key)
			}
		}
		timer.Reset(r.next(step))
		step *= 2
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *Simulator) stopAll() {
	s.mu.Lock()
	all := make([]*podState, 0, len(s.pods))
	for _, st := range s.pods {
		all = append(all, st)
	}
	clear(s.pods)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, st := range all {
		wg.Go(func() { s.teardown(st, st.grace) })
	}
	wg.Wait()
}

// Kill injects pod loss: the container gets SIGKILL (an in-process function
// sees its context cancelled with ErrKilled) and the pod ends Failed with
// exit code 137. It returns once the container is dead and its address freed.
func (s *Simulator) Kill(namespace, name string) error {
	key := namespace + "/" + name
	s.mu.Lock()
	st := s.pods[key]
	var c *runningContainer
	if st != nil {
		c = st.container
	}
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("kill pod %s: %w", key, errUnknownPod)
	}
	if c == nil || c.exited() {
		return fmt.Errorf("kill pod %s: %w", key, errNotRunning)
	}
	st.log.Info("killing container (injected pod loss)")
	c.kill(s.abandonAfter(), st.log)
	<-st.exitHandled
	return nil
}

// abandonAfter bounds the wait for a SIGKILLed (or cancelled) container;
// past it the container is reported dead and, if in-process, left to leak.
func (s *Simulator) abandonAfter() time.Duration { return max(s.cfg.KillGrace, time.Second) }

// PodAddr returns the loopback address of a simulated pod whose container
// has not exited.
func (s *Simulator) PodAddr(namespace, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.pods[namespace+"/"+name]
	if st == nil || st.released || !st.ip.IsValid() {
		return "", false
	}
	return st.ip.String(), true
}

// Running is the number of containers currently running.
func (s *Simulator) Running() int { return int(s.running.Load()) }

// StatusWrites is the number of successful pod status updates so far, for
// tests and benchmarks that count API writes.
func (s *Simulator) StatusWrites() int64 { return s.writes.Load() }

// AddressesInUse is the number of pod addresses currently allocated.
func (s *Simulator) AddressesInUse() int { return s.pool.inUse() }
