package controlplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleCRDs(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	orphan := t.TempDir()
	cases := []struct {
		name, wd, want, wantErr string
	}{
		{"at the module root", root, filepath.Join(root, "config", "crd", "bases"), ""},
		{"in a package below it", deep, filepath.Join(root, "config", "crd", "bases"), ""},
		{"outside any module", orphan, "", "no go.mod above " + orphan},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.wd)
			got, err := moduleCRDs()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ModuleCRDs() = %q, %v; want error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ModuleCRDs() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
