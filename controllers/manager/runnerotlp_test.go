package manager

import (
	"reflect"
	"strings"
	"testing"

	"tolokaforge.io/operator/controllers"
)

// The runner-tracing options reach every runner pod (PodConfig) and the
// runner NetworkPolicies (ManagerPeer.Collector), the port taken from the
// endpoint; off, neither changes.
func TestRunnerOTLPOptions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		port     int32
	}{
		{"plaintext", "http://otel-collector.observability.svc:4317", 4317},
		{"TLS, another port, a trailing slash", "https://collector:14317/", 14317},
		{"an IP", "http://10.0.0.7:4317", 4317},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := (Options{Image: "i", ManagerNamespace: "sys", RunnerOTLPEndpoint: tc.endpoint,
				RunnerOTLPCollectorNamespaces: "kubernetes.io/metadata.name=observability", RunnerOTLPCollectorPods: "app.kubernetes.io/name=opentelemetry-collector,tier=gw"}).withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if got := podConfig(o).RunnerOTLPEndpoint; got != tc.endpoint {
				t.Errorf("pod config endpoint = %q, want %q", got, tc.endpoint)
			}
			want := controllers.OTLPCollector{Port: tc.port, Namespaces: map[string]string{"kubernetes.io/metadata.name": "observability"},
				Pods: map[string]string{"app.kubernetes.io/name": "opentelemetry-collector", "tier": "gw"}}
			if got := managerPeer(o).Collector; !reflect.DeepEqual(got, want) {
				t.Errorf("collector = %+v, want %+v", got, want)
			}
		})
	}

	off, err := (Options{Image: "i", ManagerNamespace: "sys"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if e := podConfig(off).RunnerOTLPEndpoint; e != "" {
		t.Errorf("off: pod config endpoint = %q", e)
	}
	if c := managerPeer(off).Collector; !reflect.DeepEqual(c, controllers.OTLPCollector{}) {
		t.Errorf("off: collector = %+v", c)
	}
}

func TestRunnerOTLPOptionsRefuseBadInput(t *testing.T) {
	ns := "kubernetes.io/metadata.name=observability"
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"a namespace selector without an endpoint", Options{RunnerOTLPCollectorNamespaces: ns}, "manager: --runner-otlp-collector-* need --runner-otlp-endpoint"},
		{"a pod selector without an endpoint", Options{RunnerOTLPCollectorPods: "a=b"}, "need --runner-otlp-endpoint"},
		{"no scheme", Options{RunnerOTLPEndpoint: "collector:4317", RunnerOTLPCollectorNamespaces: ns}, `manager: --runner-otlp-endpoint "collector:4317": want http://host:port (plaintext) or https://host:port`},
		{"a gRPC scheme", Options{RunnerOTLPEndpoint: "grpc://collector:4317", RunnerOTLPCollectorNamespaces: ns}, "want http://host:port (plaintext) or https://host:port"},
		{"no port", Options{RunnerOTLPEndpoint: "http://collector", RunnerOTLPCollectorNamespaces: ns}, `manager: --runner-otlp-endpoint "http://collector": want an explicit port 1-65535`},
		{"port 0", Options{RunnerOTLPEndpoint: "http://collector:0", RunnerOTLPCollectorNamespaces: ns}, "want an explicit port 1-65535"},
		{"port too large", Options{RunnerOTLPEndpoint: "http://collector:70000", RunnerOTLPCollectorNamespaces: ns}, "want an explicit port 1-65535"},
		{"a port that is no number", Options{RunnerOTLPEndpoint: "http://collector:otlp", RunnerOTLPCollectorNamespaces: ns}, "manager: --runner-otlp-endpoint is not a URL"},
		{"no host", Options{RunnerOTLPEndpoint: "http://:4317", RunnerOTLPCollectorNamespaces: ns}, "nothing more"},
		{"a path", Options{RunnerOTLPEndpoint: "http://collector:4318/v1/traces", RunnerOTLPCollectorNamespaces: ns}, "nothing more"},
		{"a query", Options{RunnerOTLPEndpoint: "http://collector:4317?x=1", RunnerOTLPCollectorNamespaces: ns}, "nothing more"},
		{"a password", Options{RunnerOTLPEndpoint: "http://u:hunter2@collector:4317", RunnerOTLPCollectorNamespaces: ns}, "manager: --runner-otlp-endpoint: no user or password in the URL"},
		{"a password and a bad port", Options{RunnerOTLPEndpoint: "http://u:hunter2@collector:x", RunnerOTLPCollectorNamespaces: ns}, "manager: --runner-otlp-endpoint is not a URL"},
		{"no selector", Options{RunnerOTLPEndpoint: "http://collector:4317"}, "manager: --runner-otlp-endpoint needs --runner-otlp-collector-namespace-selector or --runner-otlp-collector-pod-selector"},
		{"a selector that is no k=v", Options{RunnerOTLPEndpoint: "http://collector:4317", RunnerOTLPCollectorPods: "collector"}, `manager: --runner-otlp-collector-pod-selector "collector": want k=v[,k=v]`},
		{"a set-based selector", Options{RunnerOTLPEndpoint: "http://collector:4317", RunnerOTLPCollectorNamespaces: "name in (a,b)"}, `manager: --runner-otlp-collector-namespace-selector "name in (a,b)"`},
		{"an invalid label value", Options{RunnerOTLPEndpoint: "http://collector:4317", RunnerOTLPCollectorPods: "app=not a label"}, "--runner-otlp-collector-pod-selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Image = "i"
			_, err := tc.o.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error holds the password: %v", err)
			}
		})
	}
}
