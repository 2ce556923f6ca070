package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// LauncherName is the small limits wrapper's file name (package
// runner/proc/toolexec). Found beside the running binary, it replaces the
// self re-exec: it links this package and little else, so a tool start pays
// ~1 ms of wrapper start instead of the whole runner binary's (~100 ms CPU
// and ~80 MB transient RSS for tolokaforge's package inits).
const LauncherName = "tolokaforge-toolexec"

var launcher struct {
	mu       sync.Mutex
	explicit string // SetLauncher's path; wins over the search
	found    string // the search's result, once done
	err      error
	searched bool
}

// SetLauncher makes Apply start tools through the wrapper at path, which
// must be an executable file: a wrong path is an error naming it, never a
// silent fall back to the self re-exec. An empty path restores the default
// (LauncherName beside os.Executable(), else os.Executable() itself). The
// setting is process-wide: the launcher belongs to the installation, not to
// one runner.
func SetLauncher(path string) error {
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("proc: tool launcher %q: %w", path, err)
		}
		if err := checkExecutable(abs); err != nil {
			return fmt.Errorf("proc: tool launcher %q: %w", path, err)
		}
		path = abs
	}
	launcher.mu.Lock()
	defer launcher.mu.Unlock()
	launcher.explicit = path
	return nil
}

// Launcher is the program Apply starts in place of a tool: SetLauncher's
// path, else LauncherName in the directory of os.Executable(), else
// os.Executable() (whose init does the same work, slower). The search runs
// once per process.
func Launcher() (string, error) {
	launcher.mu.Lock()
	defer launcher.mu.Unlock()
	if launcher.explicit != "" {
		return launcher.explicit, nil
	}
	if !launcher.searched {
		launcher.found, launcher.err = searchLauncher()
		launcher.searched = true
	}
	return launcher.found, launcher.err
}

func searchLauncher() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("proc: resolve the runner binary for the limits wrapper: %w", err)
	}
	return besideOrSelf(self), nil
}

// besideOrSelf is LauncherName in self's directory if it is there and
// executable, else self.
func besideOrSelf(self string) string {
	beside := filepath.Join(filepath.Dir(self), LauncherName)
	if checkExecutable(beside) == nil {
		return beside
	}
	return self
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (mode %s)", fi.Mode())
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable (mode %s)", fi.Mode())
	}
	return nil
}
