package podsim

import "syscall"

// procAttr puts the container in its own process group and has the kernel
// kill it if the simulator dies, so a crashed test leaves no servers behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
