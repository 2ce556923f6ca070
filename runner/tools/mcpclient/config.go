package mcpclient

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"tolokaforge.io/operator/runner/proc"
)

// selfCommand as Command[0] means the runner's own binary (os.Executable()), so a
// task can name a server compiled into it (`tolokaforge mcp shop`) without knowing
// where the binary lives.
const selfCommand = "tolokaforge"

// defaultKillGrace is how long Close lets a server exit after SIGTERM before the
// process group is killed.
const defaultKillGrace = 2 * time.Second

// Config says how to reach one MCP server. Exactly one of Command and URL is set.
type Config struct {
	// Command is the argv of a stdio server. Command[0] == SelfCommand runs the
	// runner's own executable.
	Command []string
	// Dir is the server's working directory and HOME; required with Command.
	Dir string
	// Env is extra KEY=VALUE pairs for the child, on top of a minimal environment
	// (PATH, HOME=Dir, TMPDIR, LANG). The runner's own environment is never passed.
	// Values are never logged.
	Env []string
	// URL selects the streamable HTTP transport instead of a subprocess.
	URL string
	// HTTPClient is used with URL; nil means a client of this package's own.
	HTTPClient *http.Client
	// Logger receives the child's stderr (one entry per line) and lifecycle events.
	// The zero value discards.
	Logger logr.Logger
	// KillGrace is the SIGTERM-to-SIGKILL delay of Close; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Limits are the stdio server's rlimits (package proc), inherited by
	// everything it starts; zero: the runner's own.
	Limits proc.Limits
	// Confine, when set, starts a stdio server under a supervisor
	// (proc.Supervise) confined to it (Landlock, where the kernel has it):
	// whatever the server starts stays below the supervisor, whatever it
	// does to its group, session or environment, and Close or Restart end
	// that whole subtree. nil: the server runs in its own process group
	// with Limits only (callers outside a trial, and tests that signal the
	// server's own pid).
	Confine *proc.Confinement
	// MaxOutput bounds one tool result (its text joined) in bytes; zero:
	// DefaultMaxOutput. A larger result is answered as a tool error naming
	// its size and the limit (isError), and the session keeps serving.
	MaxOutput int
}

// DefaultMaxOutput is Config.MaxOutput's default: 1 MiB, the Python tool
// host's.
const DefaultMaxOutput = 1 << 20

func (c *Config) maxOutput() int {
	if c.MaxOutput > 0 {
		return c.MaxOutput
	}
	return DefaultMaxOutput
}

func (c *Config) validate() error {
	switch {
	case len(c.Command) > 0 && c.URL != "":
		return errors.New("mcpclient: config sets both Command and URL; set one")
	case len(c.Command) == 0 && c.URL == "":
		return errors.New("mcpclient: config sets neither Command nor URL")
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return fmt.Errorf("mcpclient: URL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("mcpclient: URL %q is not an absolute http(s) URL", c.URL)
		}
		return nil
	}
	if c.Command[0] == "" {
		return errors.New("mcpclient: Command[0] is empty")
	}
	if c.Dir == "" {
		return errors.New("mcpclient: Dir is required for a stdio server (it is the server's cwd and HOME)")
	}
	if st, err := os.Stat(c.Dir); err != nil {
		return fmt.Errorf("mcpclient: Dir: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("mcpclient: Dir %q is not a directory", c.Dir)
	}
	for i, kv := range c.Env {
		// The entry itself may be a secret, so the message names only its index.
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("mcpclient: Env[%d] is not KEY=VALUE", i)
		}
	}
	return nil
}

func (c *Config) killGrace() time.Duration {
	if c.KillGrace > 0 {
		return c.KillGrace
	}
	return defaultKillGrace
}

// argv resolves SelfCommand to the running executable.
func (c *Config) argv() ([]string, error) {
	argv := append([]string(nil), c.Command...)
	if argv[0] == selfCommand {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("mcpclient: resolve %q to the runner binary: %w", selfCommand, err)
		}
		argv[0] = self
	}
	return argv, nil
}

// childEnv is the whole environment of a stdio server: a minimal base plus
// Config.Env (later entries win, so Env may override the base).
func (c *Config) childEnv() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + c.Dir,
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
	}
	return append(env, c.Env...)
}
