//go:build linux

package proc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A supervised tool under a Confinement reads and writes its folders and
// nothing else: not a folder beside them, and not the whole file system
// when its executable sits one level below the root (/bin/sh).
func TestConfinementAllowsOnlyItsFolders(t *testing.T) {
	if _, err := LandlockABI(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	ro, rw, outside := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{ro, outside} {
		if err := os.WriteFile(d+"/f", []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, script string
		ok           bool
	}{
		{"read its read-only folder", `cat "$RO/f"`, true},
		{"write its read-write folder", `echo y > "$RW/g" && cat "$RW/g"`, true},
		{"write its read-only folder", `echo y > "$RO/g"`, false},
		{"read a folder beside them", `cat "$OUT/f"`, false},
		{"list a folder beside them", `ls "$OUT"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "RO=" + ro, "RW=" + rw, "OUT=" + outside}
			if err := Supervise(cmd, Limits{}, &Confinement{ReadOnly: []string{ro}, ReadWrite: []string{rw}}); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			if tc.ok && err != nil {
				t.Errorf("%s: %v %s, want it allowed", tc.script, err, out)
			}
			if !tc.ok && (err == nil || !strings.Contains(string(out), "Permission denied")) {
				t.Errorf("%s: %v %q, want Permission denied", tc.script, err, out)
			}
		})
	}
}
