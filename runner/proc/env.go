package proc

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// keptEnv is what a runner's environment may hold: what the runner and the
// Go runtime read, and the downward-API pod IP its flags expand. Nothing
// else, and in particular no credential: a tool can read the runner's
// initial environment through /proc/<pid>/environ (PID 1 in a pod), and
// os.Unsetenv does not change that copy.
var keptEnv = map[string]bool{
	"PATH": true, "HOME": true, "LANG": true, "LC_ALL": true, "TZ": true, "TMPDIR": true,
	"POD_IP": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	// A cluster may need a proxy for the judge's provider.
	"HTTPS_PROXY": true, "HTTP_PROXY": true, "NO_PROXY": true, "https_proxy": true, "http_proxy": true, "no_proxy": true,
	// Where the runner exports its spans (api/telemetry), set by the
	// manager's --runner-otlp-endpoint: an address, no credential. The
	// other OTEL_EXPORTER_OTLP_* variables stay out: their headers may
	// carry a collector's key.
	"OTEL_EXPORTER_OTLP_ENDPOINT": true,
	"GOMAXPROCS":                  true, "GOMEMLIMIT": true, "GOGC": true, "GODEBUG": true, "GOTRACEBACK": true, "GOCOVERDIR": true,
	envScrubbed: true,
}

const envScrubbed = "TOLOKAFORGE_ENV_SCRUBBED"

// ScrubbedEnv is env without anything a runner has no use for.
func ScrubbedEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if keptEnv[k] {
			out = append(out, kv)
		}
	}
	return out
}

// ScrubEnvironment re-executes the current binary with ScrubbedEnv when the
// environment holds anything more, so that the process's /proc environ copy
// is clean too. It returns only when nothing needed scrubbing (or the
// re-exec failed, which is reported). Call it first thing in a runner
// binary's main path; never in a process that serves other things.
func ScrubEnvironment() error {
	env := os.Environ()
	clean := ScrubbedEnv(env)
	if len(clean) == len(env) {
		return nil
	}
	if os.Getenv(envScrubbed) != "" {
		return fmt.Errorf("proc: the environment still holds unexpected variables after scrubbing")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("proc: scrub the environment: resolve own binary: %w", err)
	}
	if !supported {
		os.Clearenv()
		for _, kv := range clean {
			k, v, _ := strings.Cut(kv, "=")
			_ = os.Setenv(k, v)
		}
		return nil
	}
	return fmt.Errorf("proc: scrub the environment: %w", syscall.Exec(self, os.Args, append(clean, envScrubbed+"=1")))
}
