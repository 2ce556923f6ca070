package podsim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// simserverBin is the helper container binary built once for all tests.
var simserverBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "podsim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	simserverBin = filepath.Join(dir, "simserver")
	cmd := exec.Command("go", "build", "-o", simserverBin, "./internal/simserver")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build internal/simserver:", err)
		return 1
	}
	// Must not reach subprocesses: they get a pod's environment only.
	_ = os.Setenv("PODSIM_TEST_LEAK", "leaked")
	return m.Run()
}
