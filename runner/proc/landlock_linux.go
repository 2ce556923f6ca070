package proc

import (
	"fmt"
	"path/filepath"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
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

// rules are c's, plus the system's read-only runtime folders and the tool's
// own installation (the folder above the one holding its executable, as
// named, a virtualenv's, and as resolved, the interpreter's).
func (c *Confinement) rules(tool string) []landlock.Rule {
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
	return rules
}

// restrictThread confines the calling thread (and what it execs) to c:
// file system rules, and scoped signals and abstract sockets (it cannot
// signal a process outside its domain, such as its supervisor or the
// runner). Best effort over the kernel's ABI: without Landlock it changes
// nothing (the runner warns at startup).
func (c *Confinement) restrictThread(tool string) error {
	fd, flags, err := landlock.V7.BestEffort().NewRulesetFD(c.rules(tool)...)
	if err != nil {
		return fmt.Errorf("confine to %s: %w", c, err)
	}
	if fd < 0 {
		return nil // nothing this kernel can enforce
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("confine to %s: PR_SET_NO_NEW_PRIVS: %w", c, err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("confine to %s: landlock_restrict_self: %w", c, err)
	}
	return nil
}
