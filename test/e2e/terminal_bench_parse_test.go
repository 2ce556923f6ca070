package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

func TestTermSizes(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	got, err := termSizes(env(nil))
	if err != nil || got != (termBenchSizes{exec: 200, pods: 8, trials: 20}) {
		t.Errorf("defaults: %+v, %v", got, err)
	}
	got, err = termSizes(env(map[string]string{"E2E_BENCH_EXEC": "50", "E2E_BENCH_TERMINAL_PODS": " 3 ", "E2E_BENCH_TERMINAL_TRIALS": "100"}))
	if err != nil || got != (termBenchSizes{exec: 50, pods: 3, trials: 100}) {
		t.Errorf("set: %+v, %v", got, err)
	}
	for _, bad := range []map[string]string{{"E2E_BENCH_EXEC": "0"}, {"E2E_BENCH_TERMINAL_TRIALS": "x"}, {"E2E_BENCH_TERMINAL_PODS": "-2"}} {
		if _, err := termSizes(env(bad)); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestTaskEnvironmentImage(t *testing.T) {
	const img = "127.0.0.1:5055/tolokaforge-tasks/hello-harbor@sha256:0123"
	got, err := taskEnvironmentImage([]byte(`{"task_id":"hello-harbor","environment":{"image":"` + img + `","workdir":"/app","cpus":1}}`))
	if err != nil || got != img {
		t.Errorf("got %q, %v", got, err)
	}
	for in, want := range map[string]string{
		`{"task_id":"shop"}`:                    "no environment",
		`{"task_id":"t","environment":{}}`:      "environment.image is empty",
		`{"task_id":"t","environment":{"image"`: "task description",
	} {
		if _, err := taskEnvironmentImage([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestTrialRunTimes(t *testing.T) {
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Unix(1_800_000_000+int64(s), 0)} }
	trials := []evalv1.Trial{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: evalv1.TrialStatus{StartTime: at(0), CompletionTime: at(12)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: evalv1.TrialStatus{StartTime: at(5), CompletionTime: at(35)}},
	}
	got, err := trialRunTimes(trials)
	if err != nil || len(got) != 2 || got[0] != 12*time.Second || got[1] != 30*time.Second {
		t.Errorf("got %v, %v", got, err)
	}
	trials = append(trials, evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Name: "unfinished"}, Status: evalv1.TrialStatus{StartTime: at(1)}})
	if _, err := trialRunTimes(trials); err == nil || !strings.Contains(err.Error(), "unfinished") {
		t.Errorf("an unfinished Trial: %v", err)
	}
}

func TestDurRatio(t *testing.T) {
	for _, tc := range []struct {
		a, b time.Duration
		want string
	}{
		{30 * time.Millisecond, 3 * time.Millisecond, "10.00"},
		{time.Millisecond, 3 * time.Millisecond, "0.33"},
		{time.Second, 0, "n/a"},
	} {
		if got := durRatio(tc.a, tc.b); got != tc.want {
			t.Errorf("durRatio(%v, %v) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestTermBenchTable(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x*float64(time.Millisecond)))
		}
		return out
	}
	r := termBenchResult{
		image: "reg/hello@sha256:ab", execProtocol: "websocket",
		agentExec: ms(2, 2.5, 3, 9), apiExec: ms(40, 50, 60, 90),
		envReady: ms(3000, 3200), pauseReady: ms(1000, 1100),
		trials: 20, maxParallel: 4, campaignWall: 4 * time.Minute,
		trialRun: []time.Duration{20 * time.Second, 25 * time.Second, 40 * time.Second},
	}
	out := r.table()
	for _, want := range []string{
		"terminal benchmark on real nodes (single node, 2 cores; task image reg/hello@sha256:ab)",
		"API server exec (websocket)",
		// p50 of 4 is the 2nd: 2.5 ms and 50 ms, ratio 20.00.
		"p50  2.5 ms  50.0 ms  20.00",
		"p95  9.0 ms  90.0 ms  10.00",
		"p50  3s  1s  3.00",
		"Trials/min  5.00",
		"Trials/s (the shop Campaign's: the benchmark table's Trials/s)  0.083",
		"Trial start-to-finish p50 (whole seconds)  25s",
		"Campaign of hello-harbor (20 Trials, maxParallel 4, oracle)",
	} {
		if !strings.Contains(squeeze(out), want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Nothing measured: no division by zero, no panic.
	if out := (termBenchResult{}).table(); !strings.Contains(out, "n/a") {
		t.Errorf("empty result:\n%s", out)
	}
}

// squeeze makes runs of spaces two spaces, as tabwriter's padding varies
// with the widest cell.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		for strings.Contains(l, "   ") {
			l = strings.ReplaceAll(l, "   ", "  ")
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

func TestAppendBenchOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(out, []byte("shop table\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_BENCH_OUT", out)
	if err := appendBenchOut("terminal table\n"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "shop table\nterminal table\n" {
		t.Errorf("E2E_BENCH_OUT holds %q", b)
	}
	t.Setenv("E2E_BENCH_OUT", "")
	if err := appendBenchOut("x"); err != nil {
		t.Errorf("unset E2E_BENCH_OUT: %v", err)
	}
}

// The bench's environment pod is environmentPod's shape with none of the
// manager's labels: the exec agent from the init container, on the pod
// IP's port 7070, its token from the Secret.
func TestTermEnvPod(t *testing.T) {
	p := termEnvPod("tbench-env-00", "tolokaforge:1", "reg/hello@sha256:ab")
	if _, ok := p.Labels[evalv1.LabelManagedBy]; ok {
		t.Errorf("labels %v: the manager's cache would hold the bench pod", p.Labels)
	}
	if _, ok := p.Labels[evalv1.LabelTrial]; ok {
		t.Errorf("labels %v: a trial NetworkPolicy would select the bench pod", p.Labels)
	}
	if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Image != "tolokaforge:1" ||
		strings.Join(p.Spec.InitContainers[0].Command, " ") != "/tolokaforge-execagent --install /.tolokaforge/execagent" {
		t.Errorf("init containers %+v", p.Spec.InitContainers)
	}
	c := p.Spec.Containers[0]
	if c.Image != "reg/hello@sha256:ab" || strings.Join(c.Command, " ") != "/.tolokaforge/execagent --listen=$(POD_IP):7070" {
		t.Errorf("main container %s %v", c.Image, c.Command)
	}
	var token *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == termAgentTokenEnv && e.ValueFrom != nil {
			token = e.ValueFrom.SecretKeyRef
		}
	}
	if token == nil || token.Name != termSecret || token.Key != termTokenKey {
		t.Errorf("token variable: %+v", c.Env)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil || c.ReadinessProbe.TCPSocket.Port.IntValue() != termAgentPort {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if sc := c.SecurityContext; sc == nil || sc.Privileged == nil || *sc.Privileged {
		t.Errorf("main container security context %+v", sc)
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		t.Error("the service account token is mounted")
	}
}
