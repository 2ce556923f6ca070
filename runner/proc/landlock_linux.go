package proc

import (
	"fmt"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// LandlockABI is the Landlock ABI version the kernel offers, 0 where it
// has none (an old kernel, or Landlock not among its LSMs), with why.
func LandlockABI() (int, error) {
	v, err := llsyscall.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("proc: Landlock is not available: %w", err)
	}
	return v, nil
}

// restrict confines this process (and what it starts) to c, plus the
// system's read-only runtime folders and the tool's own installation (the
// folder above the one holding its executable, as named, a virtualenv's,
// and as resolved, the interpreter's). Best effort over the kernel's ABI:
// without Landlock it changes nothing (the runner warns at startup).
func (c *Confinement) restrict(tool string) error {
	ro := append([]string(nil), systemReadOnly...)
	install := func(exe string) {
		// Never the root: /bin/python3 is not an installation of its own.
		if d := filepath.Dir(filepath.Dir(exe)); d != "/" && d != "." {
			ro = append(ro, d)
		}
	}
	install(tool)
	if real, err := filepath.EvalSymlinks(tool); err == nil {
		install(real)
	}
	rules := []landlock.Rule{
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.RODirs(c.ReadOnly...),
		landlock.RWDirs(c.ReadWrite...),
		landlock.RWFiles(devices...).IgnoreIfMissing(),
	}
	if len(c.ReadOnlyFiles) > 0 {
		rules = append(rules, landlock.ROFiles(c.ReadOnlyFiles...))
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("confine to %s: %w", c, err)
	}
	return nil
}
