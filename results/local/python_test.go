package local

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStackPython(t *testing.T) {
	cases := []struct {
		name, flag, env, want string
		pathSite              *bool // a python3 first on PATH: Debian's with (true) or without (false) its site packages
	}{
		{name: "default: PATH's python3 has what make python-deps provisions", pathSite: ptr(true), want: "python3"},
		{name: "default: PATH's python3 lacks it (a pyenv shim), Debian's has it", pathSite: ptr(false), want: "/usr/bin/python3"},
		{name: "env", env: "/usr/bin/python3", want: "/usr/bin/python3"},
		{name: "flag wins over env", flag: "/opt/py/bin/python3", env: "/usr/bin/python3", want: "/opt/py/bin/python3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(PythonEnv, tc.env)
			if tc.pathSite != nil {
				dir := t.TempDir()
				flag := " -S"
				if *tc.pathSite {
					flag = ""
				}
				if err := os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\nexec /usr/bin/python3"+flag+" \"$@\"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			if got := (StackConfig{Python: tc.flag}).python(); got != tc.want {
				t.Fatalf("python() = %q, want %q", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
