package podsim

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func listen(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln, ln.Addr().(*net.TCPAddr).Port
}

func TestProbesAgainstRealServers(t *testing.T) {
	httpLn, httpPort := listen(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Probe") != "yes" && r.URL.Query().Get("need") == "header" {
			http.Error(w, "missing header", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.invalid/elsewhere", http.StatusFound)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(httpLn) }()
	t.Cleanup(func() { _ = srv.Close() })

	grpcLn, grpcPort := listen(t)
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(grpcLn) }()
	t.Cleanup(gs.Stop)

	closedLn, closedPort := listen(t)
	_ = closedLn.Close()

	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: int32(httpPort)}}
	httpGet := func(path string, port intstr.IntOrString, headers ...corev1.HTTPHeader) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port, HTTPHeaders: headers}}
	}
	grpcProbe := func(port int, svc string) corev1.ProbeHandler {
		return corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: int32(port), Service: &svc}}
	}
	cases := []struct {
		name    string
		handler corev1.ProbeHandler
		wantErr string // "" = success
	}{
		{"http 200", httpGet("/ok", intstr.FromInt(httpPort)), ""},
		{"http named port", httpGet("/ok", intstr.FromString("http")), ""},
		{"http numeric string port", httpGet("/ok", intstr.FromString(strconv.Itoa(httpPort))), ""},
		{"http header sent", httpGet("/ok?need=header", intstr.FromInt(httpPort), corev1.HTTPHeader{Name: "X-Probe", Value: "yes"}), ""},
		{"http header missing", httpGet("/ok?need=header", intstr.FromInt(httpPort)), "status 400"},
		{"http 503", httpGet("/down", intstr.FromInt(httpPort)), "status 503"},
		{"http off-host redirect counts as success", httpGet("/away", intstr.FromInt(httpPort)), ""},
		{"http refused", httpGet("/ok", intstr.FromInt(closedPort)), "connection refused"},
		{"unknown named port", httpGet("/ok", intstr.FromString("grpc")), `probe port "grpc" is not a named container port`},
		{"grpc serving", grpcProbe(grpcPort, "up"), ""},
		{"grpc not serving", grpcProbe(grpcPort, "down"), `service "down": status NOT_SERVING`},
		{"grpc unknown service", grpcProbe(grpcPort, "nope"), "NotFound"},
		{"grpc refused", grpcProbe(closedPort, ""), "Unavailable"},
		{"tcp open", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(httpPort)}}, ""},
		{"tcp refused", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(closedPort)}}, "connection refused"},
		{"exec unsupported", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, "exec probes are not supported"},
		{"no handler", corev1.ProbeHandler{}, "probe has no handler"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProber(&corev1.Probe{ProbeHandler: tc.handler, TimeoutSeconds: 2}, "127.0.0.1", ports)
			err := p.check(context.Background())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("probe failed: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestScheduleFor(t *testing.T) {
	ceiling := 200 * time.Millisecond
	cases := []struct {
		name  string
		probe corev1.Probe
		want  probeSchedule
	}{
		{"defaults", corev1.Probe{}, probeSchedule{period: ceiling, successThreshold: 1, failThresh: 3}},
		{"long period capped", corev1.Probe{PeriodSeconds: 10, InitialDelaySeconds: 5, FailureThreshold: 2, SuccessThreshold: 2},
			probeSchedule{initialDelay: ceiling, period: ceiling, successThreshold: 2, failThresh: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := scheduleFor(&tc.probe, ceiling); got != tc.want {
				t.Fatalf("schedule = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A ceiling above the period keeps the pod's own period.
	if got := scheduleFor(&corev1.Probe{PeriodSeconds: 1}, 5*time.Second); got.period != time.Second {
		t.Fatalf("period = %v, want 1s", got.period)
	}
}

func TestReadinessThresholds(t *testing.T) {
	r := readiness{sched: probeSchedule{period: time.Second, successThreshold: 2, failThresh: 3}}
	steps := []struct {
		ok, wantReady, wantChanged bool
	}{
		{false, false, false},
		{true, false, false}, // one success is below successThreshold 2
		{true, true, true},
		{false, true, false},
		{false, true, false},
		{true, true, false}, // success resets the failure run
		{false, true, false},
		{false, true, false},
		{false, false, true}, // third failure in a row
		{true, false, false},
		{true, true, true},
	}
	for i, s := range steps {
		changed := r.observe(s.ok)
		if r.ready != s.wantReady || changed != s.wantChanged {
			t.Fatalf("step %d (ok=%v): ready=%v changed=%v, want %v %v", i, s.ok, r.ready, changed, s.wantReady, s.wantChanged)
		}
	}
	fresh := readiness{sched: probeSchedule{period: time.Second}}
	if fresh.next(40*time.Millisecond) != 40*time.Millisecond || fresh.next(5*time.Second) != time.Second {
		t.Fatal("before first success the step should be used, capped at the period")
	}
	if r.next(10*time.Millisecond) != time.Second {
		t.Fatal("after the first success probes run at the period")
	}
}
