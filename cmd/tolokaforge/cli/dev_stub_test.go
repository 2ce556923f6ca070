//go:build !dev

package cli

import (
	"bytes"
	"testing"
)

// The production build has no `dev`; asking for it says how to get it.
func TestDevIsNotInTheProductionBuild(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"dev", "--dir", t.TempDir()}, &stdout, &stderr)
	want := "tolokaforge dev: this binary was built without `dev`; build it with `go build -tags dev` (make demo does)\n"
	if code != 1 || stderr.String() != want {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
}
