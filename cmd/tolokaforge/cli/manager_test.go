package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/controllers/manager"
)

func TestManagerFlagsDefaults(t *testing.T) {
	t.Setenv("TOLOKAFORGE_IMAGE", "")
	t.Setenv("TOLOKAFORGE_PYTHON_IMAGE", "")
	f, err := parseManagerFlags([]string{"--image=reg/tolokaforge:v1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options
	if o.Image != "reg/tolokaforge:v1" || o.MaxConcurrentTrials != manager.DefaultMaxConcurrentTrials ||
		o.MetricsBindAddress != ":8080" || o.HealthProbeBindAddress != ":8081" || o.LeaderElection ||
		o.LeaderElectionID != manager.DefaultLeaderElectionID || o.Namespace != "" || o.ArtifactsDir != "" ||
		o.Entrypoint != "tolokaforge" || f.Kubeconfig != "" || o.GatewayBindAddress != ":8090" || o.GatewayURL != "" ||
		o.PythonImage != "" || o.Python != "python3" || o.Kueue != manager.KueueAuto || o.ProgressInterval != 15*time.Second {
		t.Errorf("defaults = %+v kubeconfig %q", o, f.Kubeconfig)
	}
}

func TestManagerFlagsAll(t *testing.T) {
	f, err := parseManagerFlags([]string{
		"--image=img", "--leader-elect", "--metrics-bind-address=:9090", "--health-probe-bind-address=0",
		"--max-concurrent-trials=50", "--artifacts-dir=/art", "--namespace=evals", "--kubeconfig=/k",
		"--manager-namespace=ops", "--max-concurrent-reconciles=4", "--zap-log-level=debug",
		"--gateway-bind-address=:9999", "--gateway-url=http://gw.ops.svc:9999/v1",
		"--runner-python-image=reg/tolokaforge:v1-python", "--runner-python=/usr/local/bin/python3", "--kueue=off",
		"--trial-progress-interval=1m",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Options
	if !o.LeaderElection || o.MetricsBindAddress != ":9090" || o.HealthProbeBindAddress != "0" ||
		o.MaxConcurrentTrials != 50 || o.ArtifactsDir != "/art" || o.Namespace != "evals" || f.Kubeconfig != "/k" ||
		o.ManagerNamespace != "ops" || o.MaxConcurrentReconciles != 4 ||
		o.GatewayBindAddress != ":9999" || o.GatewayURL != "http://gw.ops.svc:9999/v1" ||
		o.PythonImage != "reg/tolokaforge:v1-python" || o.Python != "/usr/local/bin/python3" || o.Kueue != manager.KueueOff ||
		o.ProgressInterval != time.Minute {
		t.Errorf("options = %+v", o)
	}
}

func TestManagerFlagsArtifactsURL(t *testing.T) {
	f, err := parseManagerFlags([]string{"--image=i", "--artifacts-url=s3://bucket/runs?region=eu-west-1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.ArtifactsURL != "s3://bucket/runs?region=eu-west-1" || f.ArtifactsDir != "" {
		t.Errorf("artifacts url %q dir %q", f.ArtifactsURL, f.ArtifactsDir)
	}
}

func TestManagerFlagsImageFromEnv(t *testing.T) {
	t.Setenv("TOLOKAFORGE_IMAGE", "from-env:1")
	t.Setenv("TOLOKAFORGE_PYTHON_IMAGE", "from-env:1-python")
	f, err := parseManagerFlags(nil, io.Discard)
	if err != nil || f.Image != "from-env:1" || f.PythonImage != "from-env:1-python" {
		t.Fatalf("image %q, python image %q, %v", f.Image, f.PythonImage, err)
	}
}

func TestManagerFlagsRefusesBadInput(t *testing.T) {
	t.Setenv("TOLOKAFORGE_IMAGE", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "manager flags: --image is required (or set $TOLOKAFORGE_IMAGE)"},
		{[]string{"--image=i", "--max-concurrent-trials=0"}, "manager flags: --max-concurrent-trials must be >= 1, got 0"},
		{[]string{"--image=i", "--max-concurrent-trials=-3"}, "manager flags: --max-concurrent-trials must be >= 1, got -3"},
		{[]string{"--image=i", "--max-concurrent-reconciles=-1"}, "manager flags: --max-concurrent-reconciles must be >= 0, got -1"},
		{[]string{"--image=i", "--runner-python= "}, "manager flags: --runner-python must name the interpreter in --runner-python-image (default python3)"},
		{[]string{"--image=i", "extra"}, `manager flags: unexpected arguments ["extra"]`},
		{[]string{"--image=i", "--max-concurrent-trials=many"}, `manager flags: invalid argument "many" for "--max-concurrent-trials" flag`},
		{[]string{"--no-such-flag"}, "manager flags: unknown flag: --no-such-flag"},
		{[]string{"--image=i", "--artifacts-url=s3://b/p", "--artifacts-dir=/art"}, "manager flags: give --artifacts-url or --artifacts-dir, not both"},
		{[]string{"--image=i", "--artifacts-url=/art"}, `manager flags: --artifacts-url "/art": want file:///DIR, s3://BUCKET/PREFIX or gs://BUCKET/PREFIX`},
		{[]string{"--image=i", "--kueue=yes"}, `manager flags: --kueue "yes": want auto, on or off`},
		{[]string{"--image=i", "--trial-progress-interval=0s"}, "manager flags: --trial-progress-interval must be at least 1s, got 0s"},
		{[]string{"--image=i", "--trial-progress-interval=500ms"}, "manager flags: --trial-progress-interval must be at least 1s, got 500ms"},
		{[]string{"--image=i", "--trial-progress-interval=-15s"}, "manager flags: --trial-progress-interval must be at least 1s, got -15s"},
		{[]string{"--image=i", "--trial-progress-interval=soon"}, `manager flags: invalid argument "soon" for "--trial-progress-interval" flag`},
		{[]string{"--image=i", "--artifacts-url=ftp://h/p"}, `manager flags: --artifacts-url "ftp://h/p": want`},
	} {
		_, err := parseManagerFlags(tc.args, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("parseManagerFlags(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestManagerHelpIsNotAnError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"manager", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--leader-elect") {
		t.Errorf("manager -h: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
