package podsim

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// defaultSelector matches every pod the operator creates.
const defaultSelector = "app.kubernetes.io/managed-by=tolokaforge"

// InProcessFunc runs a container's entrypoint inside the test process. args are
// the container's expanded command[1:]+args without the leading subcommand.
// It must return once ctx is cancelled; the cancellation cause is ErrKilled
// for Kill and ErrTerminated for pod deletion or simulator shutdown.
type InProcessFunc func(ctx context.Context, args []string) error

// Config tunes the simulator. The zero value is usable except that every pod
// must then find a container image in Binaries, DefaultBinary or InProcess.
type Config struct {
	// Selector is a label selector limiting which pods are simulated.
	// Empty means DefaultSelector.
	Selector string
	// Namespace limits the watch to one namespace; empty watches all.
	Namespace string

	// Binaries maps a container image to the executable that stands in for
	// it (process mode). DefaultBinary is used for images not in the map.
	Binaries      map[string]string
	DefaultBinary string
	// InProcess maps a subcommand (the first element of command[1:]+args)
	// to a function run in a goroutine. It takes precedence over Binaries.
	InProcess map[string]InProcessFunc
	// ExtraEnv ("K=V") is added to every subprocess environment before the
	// pod's own variables, e.g. GOCOVERDIR for coverage of integration tests.
	ExtraEnv []string
	// WorkDir is where per-pod working directories are created for
	// subprocesses. Empty means os.TempDir().
	WorkDir string

	// ProbeInterval caps readiness probe periods and initial delays so tests
	// do not wait for production-sized periods. Default 200ms.
	ProbeInterval time.Duration
	// KillGrace is how long a container gets between SIGTERM (or context
	// cancellation) and SIGKILL. The pod's terminationGracePeriodSeconds
	// lowers it further. Default 2s.
	KillGrace time.Duration
	// Workers is the number of pods reconciled concurrently. Default 8:
	// reconciles mostly wait on the API server.
	Workers int
	// FirstIP and LastIP bound the address pool (inclusive). Both must be
	// in 127.0.0.0/8. Default: 127.N.0.2-127.N.255.254, N chosen per process.
	FirstIP, LastIP netip.Addr
	// ClientQPS and ClientBurst override the rest.Config rate limit when it
	// is unset; client-go's default of 5 QPS would throttle large runs.
	// Defaults 500 and 1000.
	ClientQPS   float32
	ClientBurst int
}

func (c Config) withDefaults() (Config, labels.Selector, error) {
	if c.Selector == "" {
		c.Selector = defaultSelector
	}
	sel, err := labels.Parse(c.Selector)
	if err != nil {
		return c, nil, fmt.Errorf("podsim config: selector %q: %w", c.Selector, err)
	}
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = 200 * time.Millisecond
	}
	if c.KillGrace <= 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	// Pods bind fixed ports (8000, 50051) on their own address, and `go test`
	// runs several packages' simulators at once in separate processes, so
	// the default pool is a /16 chosen by process id rather than one shared
	// range: two processes collide only when their pids agree modulo 250.
	octet := processOctet()
	if !c.FirstIP.IsValid() {
		c.FirstIP = netip.AddrFrom4([4]byte{127, octet, 0, 2})
	}
	if !c.LastIP.IsValid() {
		c.LastIP = netip.AddrFrom4([4]byte{127, octet, 255, 254})
	}
	if c.ClientQPS <= 0 {
		c.ClientQPS = 500
	}
	if c.ClientBurst <= 0 {
		c.ClientBurst = 1000
	}
	for img, bin := range c.Binaries {
		if bin == "" {
			return c, nil, fmt.Errorf("podsim config: Binaries[%q] is empty", img)
		}
	}
	for name, fn := range c.InProcess {
		if fn == nil {
			return c, nil, fmt.Errorf("podsim config: InProcess[%q] is nil", name)
		}
	}
	return c, sel, nil
}

// processOctet is the second octet of this process's default pool, 2..251
// (127.0.x and 127.1.x stay free for explicitly configured pools).
func processOctet() byte { return byte(2 + os.Getpid()%250) }
