package podsim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prober executes one container's readiness probe against the pod address.
type prober struct {
	probe   *corev1.Probe
	host    string
	ports   []corev1.ContainerPort
	timeout time.Duration
	client  *http.Client
}

func newProber(p *corev1.Probe, host string, ports []corev1.ContainerPort) *prober {
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	tr := &http.Transport{
		// kubelet opens a fresh connection per probe and does not verify
		// certificates; pooled connections would hide a server that stopped
		// accepting.
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // kubelet semantics
	}
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// kubelet follows same-host redirects only and counts an
			// off-host redirect as success.
			if len(via) >= 10 || req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	return &prober{probe: p, host: host, ports: ports, timeout: timeout, client: client}
}

// check runs the probe once; nil means success.
func (p *prober) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	h := p.probe.ProbeHandler
	switch {
	case h.HTTPGet != nil:
		return p.checkHTTP(ctx, h.HTTPGet)
	case h.GRPC != nil:
		return p.checkGRPC(ctx, h.GRPC)
	case h.TCPSocket != nil:
		return p.checkTCP(ctx, h.TCPSocket)
	case h.Exec != nil:
		return errors.New("exec probes are not supported by the pod simulator")
	default:
		return errors.New("probe has no handler")
	}
}

func (p *prober) resolvePort(port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal <= 0 || port.IntVal > 65535 {
			return 0, fmt.Errorf("probe port %d out of range", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return p.resolvePort(intstr.FromInt32(int32(n)))
	}
	for _, cp := range p.ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("probe port %q is not a named container port", port.StrVal)
}

func (p *prober) checkHTTP(ctx context.Context, g *corev1.HTTPGetAction) error {
	port, err := p.resolvePort(g.Port)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = p.host
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	ref, err := url.Parse(g.Path)
	if err != nil {
		return fmt.Errorf("probe path %q: %w", g.Path, err)
	}
	u.Path, u.RawQuery = ref.Path, ref.RawQuery
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("probe request %s: %w", u.String(), err)
	}
	req.Header.Set("User-Agent", "kube-probe/podsim")
	for _, hh := range g.HTTPHeaders {
		if http.CanonicalHeaderKey(hh.Name) == "Host" {
			req.Host = hh.Value
			continue
		}
		req.Header.Add(hh.Name, hh.Value)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("HTTP probe %s: %w", u.String(), err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe %s: status %d", u.String(), resp.StatusCode)
	}
	return nil
}

func (p *prober) checkGRPC(ctx context.Context, g *corev1.GRPCAction) error {
	addr := net.JoinHostPort(p.host, strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("gRPC probe %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	svc := ""
	if g.Service != nil {
		svc = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
	if err != nil {
		return fmt.Errorf("gRPC probe %s service %q: %w", addr, svc, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("gRPC probe %s service %q: status %v", addr, svc, resp.GetStatus())
	}
	return nil
}

func (p *prober) checkTCP(ctx context.Context, t *corev1.TCPSocketAction) error {
	port, err := p.resolvePort(t.Port)
	if err != nil {
		return err
	}
	host := t.Host
	if host == "" {
		host = p.host
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("TCP probe %s: %w", addr, err)
	}
	return conn.Close()
}

// probeSchedule is the probe's timing, scaled down for tests.
type probeSchedule struct {
	initialDelay, period         time.Duration
	successThreshold, failThresh int
}

// firstProbeStep is the initial retry step before the first success: servers
// usually bind within milliseconds, and waiting a whole period for each of a
// trial's pods to turn Ready would dominate test time.
const firstProbeStep = 10 * time.Millisecond

func scheduleFor(p *corev1.Probe, ceiling time.Duration) probeSchedule {
	s := probeSchedule{
		initialDelay:     min(time.Duration(p.InitialDelaySeconds)*time.Second, ceiling),
		period:           ceiling,
		successThreshold: int(p.SuccessThreshold),
		failThresh:       int(p.FailureThreshold),
	}
	if p.PeriodSeconds > 0 {
		s.period = min(time.Duration(p.PeriodSeconds)*time.Second, ceiling)
	}
	if s.successThreshold <= 0 {
		s.successThreshold = 1
	}
	if s.failThresh <= 0 {
		s.failThresh = 3
	}
	return s
}

// readiness tracks consecutive results against the thresholds, as kubelet's
// prober worker does: not ready until successThreshold successes in a row,
// then ready until failureThreshold failures in a row.
type readiness struct {
	sched               probeSchedule
	ready, everReady    bool
	successes, failures int
}

// observe records one result and reports whether readiness changed.
func (r *readiness) observe(ok bool) bool {
	before := r.ready
	if ok {
		r.successes++
		r.failures = 0
		if !r.ready && r.successes >= r.sched.successThreshold {
			r.ready, r.everReady = true, true
		}
	} else {
		r.failures++
		r.successes = 0
		if r.ready && r.failures >= r.sched.failThresh {
			r.ready = false
		}
	}
	return r.ready != before
}

// next is the delay before the following probe given the current step.
func (r *readiness) next(step time.Duration) time.Duration {
	if r.everReady {
		return r.sched.period
	}
	return min(step, r.sched.period)
}
