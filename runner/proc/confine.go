package proc

import "fmt"

// Confinement is the file system a supervised tool may use (Landlock): the
// system's runtime folders (systemReadOnly) and the tool's installation
// read-only, the character devices every program needs read-write, and
// these; nothing else, so not another trial's folder, the runner's secrets
// or its auth token.
type Confinement struct {
	// ReadOnly folders (the pack's files).
	ReadOnly []string `json:"ro,omitempty"`
	// ReadOnlyFiles are single files (the host's script).
	ReadOnlyFiles []string `json:"rof,omitempty"`
	// ReadWrite folders (this trial's working folders).
	ReadWrite []string `json:"rw,omitempty"`
}

func (c *Confinement) String() string {
	return fmt.Sprintf("read-only %v %v, read-write %v", c.ReadOnly, c.ReadOnlyFiles, c.ReadWrite)
}

// systemReadOnly are the folders an interpreter and its libraries live in,
// and /proc (its own /proc/self; another process's environ stays its
// owner's, see SetNotDumpable).
var systemReadOnly = []string{"/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc"}

// devices are the character devices a program opens read-write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/tty"}
