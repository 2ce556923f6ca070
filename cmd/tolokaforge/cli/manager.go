package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/telemetry"
	"tolokaforge.io/operator/controllers"
	"tolokaforge.io/operator/controllers/gateway"
	"tolokaforge.io/operator/controllers/manager"
)

// managerFlags is what the command line of `tolokaforge manager` sets.
type managerFlags struct {
	manager.Options
	Kubeconfig string
	Context    string
	zap        zap.Options
}

func newManagerCommand(d *deps) *cobra.Command {
	c, _ := managerCommand(d)
	return c
}

// managerCommand is the manager command and the flags it fills in.
func managerCommand(d *deps) (*cobra.Command, *managerFlags) {
	f := &managerFlags{}
	c := &cobra.Command{
		Use:   "manager --image IMAGE",
		Short: "Run the operator (Trial/Campaign controllers and the host)",
		Long: `manager runs the operator until it is stopped (SIGTERM): the Trial and
Campaign controllers, the host that drives each attempt's conversation, the
judge's LLM gateway, metrics and health probes. It is the process of the
tolokaforge-manager Deployment (config/manager, the Helm chart); its pods'
runner and dbservice containers run --image.`,
		Args: func(_ *cobra.Command, args []string) error { return noArgsNamed("manager flags", args) },
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.check(); err != nil {
				return err
			}
			return runManager(c.Context(), f)
		},
	}
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("manager flags: %w", err) })
	fs := c.Flags()
	fs.BoolVar(&f.LeaderElection, "leader-elect", false, "elect a leader among manager replicas; only the leader reconciles and drives trials")
	fs.StringVar(&f.LeaderElectionID, "leader-election-id", manager.DefaultLeaderElectionID, "name of the leader election lease")
	fs.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the lease (default: the manager's in-cluster namespace)")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", manager.DefaultMetricsAddr, `address to serve Prometheus metrics on ("0" disables)`)
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", manager.DefaultProbeAddr, `address to serve /healthz and /readyz on ("0" disables)`)
	fs.IntVar(&f.MaxConcurrentTrials, "max-concurrent-trials", manager.DefaultMaxConcurrentTrials, "attempts driven at once; ready attempts beyond it wait for a free driver")
	fs.IntVar(&f.MaxConcurrentReconciles, "max-concurrent-reconciles", 0, "Trial reconciles run at once (default 8)")
	fs.DurationVar(&f.ProgressInterval, "trial-progress-interval", controllers.DefaultProgressInterval, "least time between two status writes of a Trial that carry only its running attempt's progress (turn, tool calls, tokens, cost); at least 1s")
	fs.StringVar(&f.ArtifactsDir, "artifacts-dir", "", "directory for each attempt's trajectory.yaml, grade.yaml and metrics.yaml (empty: none; same as --artifacts-url file:///DIR)")
	fs.StringVar(&f.ArtifactsURL, "artifacts-url", "", "store for each attempt's artifacts, under <namespace>/<trial>/attempt-<n>/, and the only store Tasks' spec.files.url bundles are read from (pack import --store): file:///DIR, s3://BUCKET/PREFIX[?region=&endpoint=&use_path_style=true] or gs://BUCKET/PREFIX; credentials from the provider's environment (AWS_*, ~/.aws, GOOGLE_APPLICATION_CREDENTIALS)")
	fs.StringVar(&f.Image, "image", "", "image of the runner and dbservice pods, normally the manager's own (default $TOLOKAFORGE_IMAGE)")
	fs.StringVar(&f.PythonImage, "runner-python-image", "", "image of the runner pods whose task needs Python (tau_sync/mcp_async tools, a .py MCP server, Python custom checks), e.g. tolokaforge:VERSION-python from `make image-python` (default $TOLOKAFORGE_PYTHON_IMAGE; empty: such Trials end Invalid)")
	fs.StringVar(&f.Python, "runner-python", manager.DefaultPython, "the runner's --python in --runner-python-image: a name on the image's PATH or a path")
	fs.StringVar(&f.Entrypoint, "entrypoint", "tolokaforge", "path of the tolokaforge binary in --image")
	fs.StringVar(&f.Namespace, "namespace", "", "watch only this namespace (default: all)")
	fs.StringVar(&f.ManagerNamespace, "manager-namespace", "", "namespace of the manager's pods, allowed to reach runners (default $POD_NAMESPACE, else "+manager.DefaultManagerNamespace+")")
	fs.StringVar(&f.GatewayBindAddress, "gateway-bind-address", gateway.DefaultBindAddress, `address to serve the judge's LLM gateway (/v1/chat/completions) on ("0" disables)`)
	fs.StringVar(&f.GatewayURL, "gateway-url", "", "the gateway's URL as runner pods reach it, e.g. http://tolokaforge-gateway.tolokaforge-system.svc:8090/v1 (empty: judges get no credential)")
	fs.Int32Var(&f.RunnerMetricsPort, "runner-metrics-port", 0, "port every runner pod the manager makes serves Prometheus /metrics on (its pod IP), admitted by the runner NetworkPolicies from the scraper the --runner-metrics-scraper-* selectors name; 0: off")
	fs.StringVar(&f.RunnerMetricsTokenFile, "runner-metrics-token-file", "", "file holding the scraper's bearer token (e.g. the tolokaforge-metrics-reader Secret's key token, mounted), copied into every runner's credential Secret: runners' /metrics accept it, their gRPC never; required with --runner-metrics-port")
	fs.StringVar(&f.RunnerMetricsScraperNamespaces, "runner-metrics-scraper-namespace-selector", "", "labels of the scraper's namespaces (k=v[,k=v]), e.g. kubernetes.io/metadata.name=monitoring")
	fs.StringVar(&f.RunnerMetricsScraperPods, "runner-metrics-scraper-pod-selector", "", "labels of the scraper's pods (k=v[,k=v]), e.g. app.kubernetes.io/name=prometheus; with no namespace selector, pods in the runner's own namespace")
	fs.StringVar(&f.RunnerOTLPEndpoint, "runner-otlp-endpoint", "", "OTLP/gRPC endpoint every runner pod the manager makes exports its spans to (http://host:port or https://host:port, the port explicit; usually the manager's own OTEL_EXPORTER_OTLP_ENDPOINT), set as the runner container's OTEL_EXPORTER_OTLP_ENDPOINT; the runner NetworkPolicies let runners reach that port on the pods the --runner-otlp-collector-* selectors name; empty: runners export nothing")
	fs.StringVar(&f.RunnerOTLPCollectorNamespaces, "runner-otlp-collector-namespace-selector", "", "labels of the OTLP collector's namespaces (k=v[,k=v]), e.g. kubernetes.io/metadata.name=observability")
	fs.StringVar(&f.RunnerOTLPCollectorPods, "runner-otlp-collector-pod-selector", "", "labels of the OTLP collector's pods (k=v[,k=v]), e.g. app.kubernetes.io/name=opentelemetry-collector; with no namespace selector, pods in the runner's own namespace")
	fs.StringVar((*string)(&f.Kueue), "kueue", string(manager.KueueAuto), "Kueue integration: Trials (or their Campaign) that name a LocalQueue with the label kueue.x-k8s.io/queue-name wait for their Workload's admission; auto (when Kueue's Workload API is served), on or off")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	fs.StringVar(&f.Context, "context", "", "the kubeconfig context to use (default: its current context)")
	f.zap.Development = false
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(zfs)
	fs.AddGoFlagSet(zfs)
	return c, f
}

// parseManagerFlags parses the manager's command line without running it.
// Output (usage, errors) goes to out.
func parseManagerFlags(args []string, out io.Writer) (*managerFlags, error) {
	c, f := managerCommand(&deps{stdout: out, stderr: out})
	c.SetOut(out)
	c.SetErr(out)
	if err := c.ParseFlags(args); err != nil {
		return nil, fmt.Errorf("manager flags: %w", err)
	}
	if err := noArgsNamed("manager flags", c.Flags().Args()); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// check refuses flags the manager cannot run with.
func (f *managerFlags) check() error {
	if f.Image == "" {
		f.Image = os.Getenv("TOLOKAFORGE_IMAGE")
	}
	if f.PythonImage == "" {
		f.PythonImage = os.Getenv("TOLOKAFORGE_PYTHON_IMAGE")
	}
	if f.Image == "" {
		return errors.New("manager flags: --image is required (or set $TOLOKAFORGE_IMAGE)")
	}
	if strings.TrimSpace(f.Python) == "" {
		return errors.New("manager flags: --runner-python must name the interpreter in --runner-python-image (default " + manager.DefaultPython + ")")
	}
	if f.MaxConcurrentTrials < 1 {
		return fmt.Errorf("manager flags: --max-concurrent-trials must be >= 1, got %d", f.MaxConcurrentTrials)
	}
	if f.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("manager flags: --max-concurrent-reconciles must be >= 0, got %d", f.MaxConcurrentReconciles)
	}
	if f.ProgressInterval < time.Second {
		return fmt.Errorf("manager flags: --trial-progress-interval must be at least 1s, got %s", f.ProgressInterval)
	}
	switch f.Kueue {
	case manager.KueueAuto, manager.KueueOn, manager.KueueOff:
	default:
		return fmt.Errorf("manager flags: --kueue %q: want auto, on or off", f.Kueue)
	}
	if f.ArtifactsURL != "" && f.ArtifactsDir != "" {
		return errors.New("manager flags: give --artifacts-url or --artifacts-dir, not both")
	}
	if f.ArtifactsURL != "" && !blobstore.IsURL(f.ArtifactsURL) {
		return fmt.Errorf("manager flags: --artifacts-url %q: want file:///DIR, s3://BUCKET/PREFIX or gs://BUCKET/PREFIX", f.ArtifactsURL)
	}
	return nil
}

// RestConfig loads the cluster connection the flags name.
func (f *managerFlags) RestConfig() (*rest.Config, error) {
	if f.Kubeconfig != "" || f.Context != "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = f.Kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", f.Kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("load cluster config: %w", err)
	}
	return cfg, nil
}

// runManager runs the manager until ctx ends.
func runManager(ctx context.Context, f *managerFlags) error {
	log := zap.New(zap.UseFlagOptions(&f.zap))
	ctrl.SetLogger(log)
	limit, err := applyMemoryLimit(os.Getenv)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if limit > 0 {
		log.Info("soft memory limit from the container's", "bytes", limit, "share", memoryLimitShare)
	}
	cfg, err := f.RestConfig()
	if err != nil {
		return err
	}
	// OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on: every attempt the
	// manager drives is a trace (controllers/host). Unset, the global
	// provider stays the no-op.
	tp, shutdown, err := telemetry.Tracing(ctx, "tolokaforge-manager")
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if tp != nil {
		otel.SetTracerProvider(tp)
		log.Info("tracing attempts over OTLP")
	}
	defer func() {
		// Bounded: a dead collector must not hold the exit.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Error(err, "flush traces")
		}
	}()
	opts := f.Options
	opts.Logger = log
	log.Info("starting manager", "image", opts.Image, "pythonImage", opts.PythonImage, "maxConcurrentTrials", opts.MaxConcurrentTrials,
		"namespace", opts.Namespace, "leaderElection", opts.LeaderElection, "runnerMetricsPort", opts.RunnerMetricsPort)
	return manager.Run(ctx, cfg, opts)
}
