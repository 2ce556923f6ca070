package local

import "testing"

func TestStackPython(t *testing.T) {
	cases := []struct {
		name, flag, env, want string
	}{
		{"default", "", "", "python3"},
		{"env", "", "/usr/bin/python3", "/usr/bin/python3"},
		{"flag wins over env", "/opt/py/bin/python3", "/usr/bin/python3", "/opt/py/bin/python3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(PythonEnv, tc.env)
			if got := (StackConfig{Python: tc.flag}).python(); got != tc.want {
				t.Fatalf("python() = %q, want %q", got, tc.want)
			}
		})
	}
}
