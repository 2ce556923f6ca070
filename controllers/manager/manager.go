package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	kueuev1 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/authn"
	"tolokaforge.io/operator/api/llm"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/controllers/kueue"
)

// Defaults of Options.
const (
	DefaultMaxConcurrentTrials = 10
	DefaultMetricsAddr         = ":8080"
	DefaultProbeAddr           = ":8081"
	DefaultLeaderElectionID    = "tolokaforge-manager.eval.tolokaforge.io"
	// DefaultManagerNamespace is config/manager's namespace, used for the
	// network policy's manager peer when POD_NAMESPACE is not set.
	DefaultManagerNamespace = "tolokaforge-system"
	// DefaultPython is the runner's --python in the Python image.
	DefaultPython = controllers.DefaultPython
)

// Options configure a manager. Zero values take the defaults above.
type Options struct {
	// Image runs the runner and dbservice pods: the manager's own image.
	Image string
	// Entrypoint is the binary's path in Image (default "tolokaforge").
	Entrypoint string
	// PythonImage runs the runner pods of tasks whose tools or checks need
	// Python (`make image-python`); empty: such Trials end Invalid, naming
	// --runner-python-image.
	PythonImage string
	// Python is the runner's --python in PythonImage (default
	// controllers.DefaultPython, python3 on the image's PATH).
	Python string
	// MaxConcurrentTrials bounds the drivers running attempts at once.
	MaxConcurrentTrials int
	// MaxConcurrentReconciles of the Trial controller (default 8).
	MaxConcurrentReconciles int
	// ProgressInterval is the least time between two status writes of a
	// Trial that carry only its running attempt's progress (0:
	// controllers.DefaultProgressInterval).
	ProgressInterval time.Duration
	// NoSlots runs every attempt on pods of its own, whatever the Trials'
	// spec.slots say (controllers.TrialReconciler.NoSlots).
	NoSlots bool
	// ArtifactsDir receives each attempt's trajectory, grade and metrics;
	// empty writes none.
	ArtifactsDir string
	// ArtifactsURL is the store every attempt's artifacts go to (file://,
	// s3://, gs://: see api/artifacts/blobstore), keyed
	// <namespace>/<trial>/attempt-<n>/; ArtifactsDir D is file://D. At most
	// one of the two.
	ArtifactsURL string
	// Namespace limits the watch to one namespace; empty watches all.
	Namespace string
	// ManagerNamespace is where the manager's pods run, the only namespace
	// the network policies let reach runners. Default $POD_NAMESPACE, else
	// DefaultManagerNamespace.
	ManagerNamespace string
	// GatewayPort is the manager's port runners may reach (its LLM gateway);
	// the runner egress policy admits exactly that port on the manager's
	// pods. 0 (default): runners may not reach the manager.
	GatewayPort int32
	// MetricsBindAddress ("0" disables) and HealthProbeBindAddress ("0" or
	// empty disables; Main defaults it to DefaultProbeAddr).
	MetricsBindAddress     string
	HealthProbeBindAddress string
	LeaderElection         bool
	LeaderElectionID       string
	// LeaderElectionNamespace defaults to the in-cluster namespace.
	LeaderElectionNamespace string
	// Logger receives the manager's logs (default logr.Discard()).
	Logger logr.Logger

	// Actors builds each attempt's agent and user actors (default
	// controllers.DefaultActors).
	Actors controllers.ActorFactory
	// Dial connects to runners (default controllers.DialRunner()).
	Dial controllers.RunnerDialer
	// WrapRunner, when set, wraps every attempt's runner client (tests use
	// it to observe RPCs).
	WrapRunner controllers.RunnerWrapper
	// Pool, when set, is used instead of a new one (tests inspect it).
	Pool *controllers.Pool
	// GatewayBindAddress serves the LLM gateway (controllers/gateway) the
	// runner's judge calls; empty or "0" disables it (Main defaults it to
	// gateway.DefaultBindAddress).
	GatewayBindAddress string
	// GatewayURL is the gateway as runner pods reach it (a Service in front
	// of the manager), the judge's base URL in every TrialSpec. Empty: no
	// judge credential reaches the runner at all.
	GatewayURL string
	// Campaign tunes the Campaign controller (tests shorten its status interval).
	Campaign []campaign.Option
	// RunnerMetricsPort has every runner the manager makes (an attempt's,
	// a warm slot's) serve /metrics on its pod IP at this port, and the
	// runner NetworkPolicies admit the scraper to it. 0 (default): off.
	RunnerMetricsPort int32
	// RunnerMetricsTokenFile holds the scraper's bearer token (the
	// tolokaforge-metrics-reader Secret, mounted): read at start, copied
	// into every runner's credential Secret; a runner's /metrics accepts it,
	// its RunnerService never. Required with RunnerMetricsPort.
	RunnerMetricsTokenFile string
	// RunnerMetricsScraperNamespaces and RunnerMetricsScraperPods select the
	// scraper's namespaces and pods ("k=v,k2=v2", equality only) for the
	// runner NetworkPolicies; at least one with RunnerMetricsPort.
	RunnerMetricsScraperNamespaces string
	RunnerMetricsScraperPods       string
	// runnerMetrics and scraper are the above, read and parsed.
	runnerMetrics controllers.RunnerMetrics
	scraper       controllers.MetricsScraper
	// RunnerOTLPEndpoint is the OTLP/gRPC endpoint every runner the manager
	// makes exports its spans to (http:// or https://, host and port, as
	// OTEL_EXPORTER_OTLP_ENDPOINT); empty (default): runners trace nothing.
	RunnerOTLPEndpoint string
	// RunnerOTLPCollectorNamespaces and RunnerOTLPCollectorPods select the
	// collector's namespaces and pods ("k=v,k2=v2", equality only) the
	// runner NetworkPolicies let runners reach on the endpoint's port; at
	// least one with RunnerOTLPEndpoint.
	RunnerOTLPCollectorNamespaces string
	RunnerOTLPCollectorPods       string
	// collector is the above, parsed.
	collector controllers.OTLPCollector
	// Kueue turns on the Kueue integration (controllers/kueue): KueueAuto
	// (the default) when the API server serves Kueue's Workloads, KueueOn
	// always (Kueue must be installed), KueueOff never (the queue label
	// then means nothing and Trials run as without Kueue).
	Kueue KueueMode
}

// KueueMode says when the manager runs the Kueue integration.
type KueueMode string

const (
	KueueAuto KueueMode = "auto"
	KueueOn   KueueMode = "on"
	KueueOff  KueueMode = "off"
)

func (o Options) withDefaults() (Options, error) {
	if o.Image == "" {
		return o, errors.New("manager: an image for the runner and dbservice pods is required (--image)")
	}
	if o.MaxConcurrentTrials == 0 {
		o.MaxConcurrentTrials = DefaultMaxConcurrentTrials
	}
	if o.MaxConcurrentTrials < 0 {
		return o, fmt.Errorf("manager: --max-concurrent-trials must be >= 1, got %d", o.MaxConcurrentTrials)
	}
	if o.MaxConcurrentReconciles < 0 {
		return o, fmt.Errorf("manager: max concurrent reconciles must be >= 0, got %d", o.MaxConcurrentReconciles)
	}
	if a := o.GatewayBindAddress; o.GatewayPort == 0 && a != "" && a != "0" {
		// The namespace's runner NetworkPolicy lets runners reach the port the
		// gateway serves on; one flag sets both.
		_, port, err := net.SplitHostPort(a)
		if err != nil {
			return o, fmt.Errorf("manager: --gateway-bind-address %q: %w", a, err)
		}
		n, err := strconv.ParseInt(port, 10, 32)
		if err != nil {
			return o, fmt.Errorf("manager: --gateway-bind-address %q: port %q is not a number", a, port)
		}
		o.GatewayPort = int32(n)
	}
	if o.GatewayPort < 0 || o.GatewayPort > 65535 {
		return o, fmt.Errorf("manager: gateway port must be 0 (none) or 1-65535, got %d", o.GatewayPort)
	}
	if err := o.parseRunnerMetrics(); err != nil {
		return o, err
	}
	if err := o.parseRunnerOTLP(); err != nil {
		return o, err
	}
	if o.MetricsBindAddress == "" {
		o.MetricsBindAddress = "0"
	}
	if o.HealthProbeBindAddress == "0" {
		o.HealthProbeBindAddress = ""
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	if o.ManagerNamespace == "" {
		o.ManagerNamespace = os.Getenv("POD_NAMESPACE")
	}
	if o.ManagerNamespace == "" {
		o.ManagerNamespace = DefaultManagerNamespace
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.ArtifactsURL != "" && o.ArtifactsDir != "" {
		return o, fmt.Errorf("manager: give --artifacts-url or --artifacts-dir, not both")
	}
	if o.ArtifactsURL != "" && !blobstore.IsURL(o.ArtifactsURL) {
		return o, fmt.Errorf("manager: --artifacts-url %q: want file:///dir, s3://bucket/prefix or gs://bucket/prefix", o.ArtifactsURL)
	}
	if o.ArtifactsDir != "" {
		u, err := blobstore.FileURL(o.ArtifactsDir)
		if err != nil {
			return o, fmt.Errorf("manager: %w", err)
		}
		o.ArtifactsURL, o.ArtifactsDir = u, ""
	}
	if o.Actors == nil {
		o.Actors = controllers.DefaultActors
	}
	if o.Dial == nil {
		o.Dial = controllers.DialRunner()
	}
	return o, nil
}

// parseRunnerMetrics reads the runner-metrics options into runnerMetrics
// and scraper. The errors name the flags, never the token.
func (o *Options) parseRunnerMetrics() error {
	port := o.RunnerMetricsPort
	if port == 0 {
		if o.RunnerMetricsTokenFile != "" || o.RunnerMetricsScraperNamespaces != "" || o.RunnerMetricsScraperPods != "" {
			return errors.New("manager: --runner-metrics-token-file and --runner-metrics-scraper-* need --runner-metrics-port")
		}
		return nil
	}
	switch {
	case port < 0 || port > 65535:
		return fmt.Errorf("manager: --runner-metrics-port must be 0 (off) or 1-65535, got %d", port)
	case port == controllers.RunnerPort || port == controllers.DBServicePort:
		// The runner's gRPC port, or the slot DB service's on loopback.
		return fmt.Errorf("manager: --runner-metrics-port %d is taken in runner pods (%d: gRPC, %d: DB service)", port, controllers.RunnerPort, controllers.DBServicePort)
	}
	if o.RunnerMetricsTokenFile == "" {
		return errors.New("manager: --runner-metrics-port needs --runner-metrics-token-file (the scraper's bearer token: a runner's own is per pod, unknown to Prometheus)")
	}
	tok, err := authn.ReadTokenFile(o.RunnerMetricsTokenFile)
	if err != nil {
		return fmt.Errorf("manager: --runner-metrics-token-file: %w", err)
	}
	namespaces, err := labels.ConvertSelectorToLabelsMap(o.RunnerMetricsScraperNamespaces)
	if err != nil {
		return fmt.Errorf("manager: --runner-metrics-scraper-namespace-selector %q: want k=v[,k=v]: %w", o.RunnerMetricsScraperNamespaces, err)
	}
	pods, err := labels.ConvertSelectorToLabelsMap(o.RunnerMetricsScraperPods)
	if err != nil {
		return fmt.Errorf("manager: --runner-metrics-scraper-pod-selector %q: want k=v[,k=v]: %w", o.RunnerMetricsScraperPods, err)
	}
	if len(namespaces) == 0 && len(pods) == 0 {
		// An empty peer would admit every pod of the runner's namespace.
		return errors.New("manager: --runner-metrics-port needs --runner-metrics-scraper-namespace-selector or --runner-metrics-scraper-pod-selector (who may scrape the runners)")
	}
	o.runnerMetrics = controllers.RunnerMetrics{Port: port, Token: tok}
	o.scraper = controllers.MetricsScraper{Port: port, Namespaces: namespaces, Pods: pods}
	return nil
}

// parseRunnerOTLP reads the runner-tracing options into collector. The
// endpoint must name its port: the NetworkPolicy rule opens exactly that
// port on the collector's pods, and a default guessed here could differ
// from the exporter's.
func (o *Options) parseRunnerOTLP() error {
	ep := o.RunnerOTLPEndpoint
	if ep == "" {
		if o.RunnerOTLPCollectorNamespaces != "" || o.RunnerOTLPCollectorPods != "" {
			return errors.New("manager: --runner-otlp-collector-* need --runner-otlp-endpoint")
		}
		return nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		// url.Error's text repeats the whole URL, which may hold a
		// password; its cause does not.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("manager: --runner-otlp-endpoint is not a URL: %w", err)
	}
	if u.User != nil {
		// It would land in every runner pod's spec, which many may read.
		return errors.New("manager: --runner-otlp-endpoint: no user or password in the URL (it goes into every runner pod's spec)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("manager: --runner-otlp-endpoint %q: want http://host:port (plaintext) or https://host:port", ep)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("manager: --runner-otlp-endpoint %q: want http://host:port or https://host:port, nothing more", ep)
	}
	port, err := strconv.ParseInt(u.Port(), 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("manager: --runner-otlp-endpoint %q: want an explicit port 1-65535 (the collector pods' OTLP/gRPC port, e.g. 4317)", ep)
	}
	namespaces, err := labels.ConvertSelectorToLabelsMap(o.RunnerOTLPCollectorNamespaces)
	if err != nil {
		return fmt.Errorf("manager: --runner-otlp-collector-namespace-selector %q: want k=v[,k=v]: %w", o.RunnerOTLPCollectorNamespaces, err)
	}
	pods, err := labels.ConvertSelectorToLabelsMap(o.RunnerOTLPCollectorPods)
	if err != nil {
		return fmt.Errorf("manager: --runner-otlp-collector-pod-selector %q: want k=v[,k=v]: %w", o.RunnerOTLPCollectorPods, err)
	}
	if len(namespaces) == 0 && len(pods) == 0 {
		// An empty peer would open that port on every pod of the runner's
		// namespace.
		return errors.New("manager: --runner-otlp-endpoint needs --runner-otlp-collector-namespace-selector or --runner-otlp-collector-pod-selector (which pods receive the runners' spans)")
	}
	o.collector = controllers.OTLPCollector{Port: int32(port), Namespaces: namespaces, Pods: pods}
	return nil
}

func managerPeer(o Options) controllers.ManagerPeer {
	p := controllers.DefaultManagerPeer(o.ManagerNamespace)
	p.GatewayPort = o.GatewayPort
	p.Scraper = o.scraper
	p.Collector = o.collector
	return p
}

// Scheme holds the types the manager reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := evalv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := kueuev1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	return s, nil
}

// New builds the manager without starting it.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, errors.New("manager: rest config is nil")
	}
	kueueOn, err := kueueEnabled(cfg, opts.Kueue)
	if err != nil {
		return nil, err
	}
	mgr, err := newControllerManager(cfg, opts, kueueOn)
	if err != nil {
		return nil, err
	}
	if err := addReconcilers(mgr, opts, kueueOn); err != nil {
		return nil, err
	}
	if err := addGateway(mgr, opts); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("manager: healthz: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("manager: readyz: %w", err)
	}
	return mgr, nil
}

// newControllerManager is controller-runtime's manager for cfg: the scheme,
// the cache, metrics, probes and leader election.
func newControllerManager(cfg *rest.Config, opts Options, kueueOn bool) (ctrl.Manager, error) {
	if cfg == nil {
		return nil, errors.New("manager: rest config is nil")
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// Like controller-runtime's GetConfig: rely on the server's priority
		// and fairness rather than client-go's 5 QPS default, which would
		// throttle a campaign's worth of trials.
		cfg.QPS = -1
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        opts.Logger,
		Cache:                         cacheOptions(opts.Namespace, kueueOn),
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(30 * time.Second),
		// Tests and `tolokaforge dev` may run a second manager in the same
		// process after the first stopped.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	return mgr, nil
}

// addReconcilers adds the Task, Trial and Campaign reconcilers, the Trials'
// driver pool and the artifacts store they write to.
func addReconcilers(mgr ctrl.Manager, opts Options, kueueOn bool) error {
	var store *blobstore.Store
	if opts.ArtifactsURL != "" {
		// Opening contacts nothing; a store that refuses writes shows in
		// each attempt's log and leaves status.artifactsURL unset.
		var err error
		if store, err = blobstore.Open(context.Background(), opts.ArtifactsURL); err != nil {
			return fmt.Errorf("manager: %w", err)
		}
	}
	metrics := controllers.DefaultMetrics()
	pool := opts.Pool
	if pool == nil {
		pool = controllers.NewPool(opts.MaxConcurrentTrials, metrics, opts.Logger.WithName("pool"))
	}
	// Pack bundles (spec.files.url) are read from the artifact store too: one
	// store, one set of credentials, all on the manager.
	tasks := &controllers.TaskReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Packs: store}
	if err := tasks.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("manager: task controller: %w", err)
	}
	var queue *kueue.Integration
	var view controllers.QueueView // nil unless the integration runs
	if kueueOn {
		opts.Logger.Info("Kueue integration on: Trials that name a queue (label " + evalv1.LabelQueueName + ") wait for their Workload's admission")
		queue = &kueue.Integration{Client: mgr.GetClient(), Log: opts.Logger.WithName("kueue")}
		view = queue
	}
	trials := controllers.NewTrialReconciler(mgr, controllers.TrialReconciler{
		Queue: view,
		Pool:  pool,
		Packs: store,
		Driver: &controllers.Driver{
			APIReader:  mgr.GetAPIReader(),
			Dial:       opts.Dial,
			Actors:     opts.Actors,
			Limits:     llm.NewLimits(),
			Artifacts:  store,
			Metrics:    metrics,
			Log:        opts.Logger.WithName("driver"),
			WrapRunner: opts.WrapRunner,
			GatewayURL: opts.GatewayURL,
		},
		Pods:                    podConfig(opts),
		ManagerPeer:             managerPeer(opts),
		Metrics:                 metrics,
		Log:                     opts.Logger.WithName("trial"),
		MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		ProgressInterval:        opts.ProgressInterval,
		NoSlots:                 opts.NoSlots,
	})
	if err := trials.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("manager: trial controller: %w", err)
	}
	if queue != nil {
		if err := queue.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("manager: kueue integration: %w", err)
		}
	}
	campaignOpts := append([]campaign.Option{campaign.WithLogger(opts.Logger.WithName("campaign"))}, opts.Campaign...)
	campaigns, err := campaign.NewReconciler(mgr, campaignOpts...)
	if err != nil {
		return fmt.Errorf("manager: campaign controller: %w", err)
	}
	if err := campaigns.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("manager: campaign controller: %w", err)
	}
	return nil
}

// kueueEnabled decides whether the manager runs the Kueue integration.
func kueueEnabled(cfg *rest.Config, mode KueueMode) (bool, error) {
	switch mode {
	case KueueOff:
		return false, nil
	case KueueOn:
		return true, nil
	case KueueAuto, "":
		on, err := kueue.Served(cfg)
		if err != nil {
			return false, fmt.Errorf("manager: %w", err)
		}
		return on, nil
	default:
		return false, fmt.Errorf("manager: kueue mode %q: want auto, on or off", mode)
	}
}

// addGateway adds the LLM gateway when it has an address.
func addGateway(mgr ctrl.Manager, opts Options) error {
	a := opts.GatewayBindAddress
	if a == "" || a == "0" {
		return nil
	}
	// Every replica serves the gateway (it keeps no state): Trials come
	// from the cache, Secrets from direct gets (no Secret informer).
	gw := &gateway.Gateway{
		Trials:   mgr.GetClient(),
		Secrets:  mgr.GetAPIReader(),
		Upstream: controllers.JudgeUpstream(mgr.GetAPIReader()),
		Addr:     a,
		Log:      opts.Logger.WithName("gateway"),
	}
	if err := mgr.Add(gw); err != nil {
		return fmt.Errorf("manager: gateway: %w", err)
	}
	return nil
}

// Run runs the manager against cfg until ctx ends. Attempts still running
// then are abandoned; the next manager records them as ManagerRestarted and
// retries them.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// stripManagedFields is every cached object's transform.
var stripManagedFields = cache.TransformStripManagedFields()

// stripTrialPolicySpec keeps a trial's own NetworkPolicy in the cache
// without its spec or managedFields: the controller only asks whether it
// exists and deletes it by UID, and a finished Trial's policy stays until
// the Trial goes, so at 10,000 Trials the specs were the largest part of the
// cache's growth. The namespace's policy (no trial label) keeps its spec:
// the controller compares it with its own.
func stripTrialPolicySpec(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	if np, ok := obj.(*networkingv1.NetworkPolicy); ok && np.Labels[evalv1.LabelTrial] != "" {
		np.Spec = networkingv1.NetworkPolicySpec{}
	}
	return obj, nil
}

// cacheOptions are the informers' options: only our pods and policies are
// cached, never a whole cluster's, and no object keeps its managedFields in
// memory (server-side apply bookkeeping the controllers never read; at 10,000
// Trials it was most of the manager's growth in resident memory).
func cacheOptions(namespace string, kueueOn bool) cache.Options {
	ours := labels.SelectorFromSet(labels.Set{evalv1.LabelManagedBy: evalv1.ManagedByValue})
	o := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:                 {Label: ours},
			&networkingv1.NetworkPolicy{}: {Label: ours, Transform: stripTrialPolicySpec},
		},
		DefaultTransform: stripManagedFields,
	}
	if kueueOn {
		// Only the Workloads of our Trials, never a cluster's.
		o.ByObject[&kueuev1.Workload{}] = cache.ByObject{Label: ours}
	}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	return o
}

// podConfig is the part of opts every attempt's pods take.
func podConfig(opts Options) controllers.PodConfig {
	return controllers.PodConfig{Image: opts.Image, PythonImage: opts.PythonImage, Python: opts.Python,
		Entrypoint: opts.Entrypoint, GatewayURL: opts.GatewayURL, RunnerMetrics: opts.runnerMetrics,
		RunnerOTLPEndpoint: opts.RunnerOTLPEndpoint}
}
