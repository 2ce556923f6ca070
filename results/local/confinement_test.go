package local_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/results/local"
)

// trial run, pack validate and regrade say so when the kernel cannot confine
// the pack's code: the stack's Warnings, which the CLI prints.
func TestStackWarnsWithoutLandlock(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		abi  func() (int, error)
		want string // "" = no warning
	}{
		{"landlock", func() (int, error) { return 7, nil }, ""},
		{"no landlock", func() (int, error) { return 0, errors.New("landlock is not in lsm=") }, "this kernel has no Landlock (landlock is not in lsm=)"},
		{"abi 0", func() (int, error) { return 0, nil }, "this kernel has no Landlock (ABI version 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := local.StartStack(ctx, local.StackConfig{SelfExecutable: exe, WorkDir: t.TempDir(), LandlockABI: tc.abi})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			switch {
			case tc.want == "" && len(s.Warnings) != 0:
				t.Fatalf("warnings %q with Landlock", s.Warnings)
			case tc.want != "" && (len(s.Warnings) != 1 || !strings.HasPrefix(s.Warnings[0], tc.want) ||
				!strings.Contains(s.Warnings[0], "the judge key, the auth token")):
				t.Fatalf("warnings %q, want one starting %q and naming what is exposed", s.Warnings, tc.want)
			}
		})
	}
}
