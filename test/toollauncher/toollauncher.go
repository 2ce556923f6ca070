// Package toollauncher builds the runner's small limits wrapper
// (runner/proc/toolexec) for tests that start runners in process, so their
// tool processes are wrapped as in production rather than by a re-executed
// 100 MB test binary.
//
// Test code only: production code never imports it.
//
// Imports: runner/proc and the standard library.
package toollauncher

import (
	"fmt"
	"os/exec"
	"path/filepath"

	"tolokaforge.io/operator/runner/proc"
)

// Build compiles runner/proc/toolexec into dir as proc.LauncherName and
// returns the binary's path.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, proc.LauncherName)
	b, err := exec.Command("go", "build", "-o", out, "tolokaforge.io/operator/runner/proc/toolexec").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the tool launcher: %w\n%s", err, b)
	}
	return out, nil
}
