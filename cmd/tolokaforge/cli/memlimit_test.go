package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{name: "no limit", env: map[string]string{}, want: 0},
		{name: "1Gi limit", env: map[string]string{MemoryLimitEnv: "1073741824"}, want: 966367641},
		{name: "spaces around", env: map[string]string{MemoryLimitEnv: " 1000 "}, want: 900},
		{name: "GOMEMLIMIT wins", env: map[string]string{MemoryLimitEnv: "1073741824", "GOMEMLIMIT": "500MiB"}, want: 0},
		{name: "a quantity, not bytes", env: map[string]string{MemoryLimitEnv: "1Gi"}, wantErr: `TOLOKAFORGE_MEMORY_LIMIT="1Gi": want the container's memory limit as a positive number of bytes`},
		{name: "zero", env: map[string]string{MemoryLimitEnv: "0"}, wantErr: `TOLOKAFORGE_MEMORY_LIMIT="0"`},
		{name: "negative", env: map[string]string{MemoryLimitEnv: "-5"}, wantErr: `TOLOKAFORGE_MEMORY_LIMIT="-5"`},
		{name: "max int64 is no limit", env: map[string]string{MemoryLimitEnv: "9223372036854775807"}, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memoryLimit(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("memoryLimit = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// The limit reaches the runtime; a bad value leaves it as it was.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if _, err := applyMemoryLimit(func(k string) string { return map[string]string{MemoryLimitEnv: "2e9"}[k] }); err == nil {
		t.Fatal("2e9 accepted")
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("a rejected value changed the limit to %d (was %d)", got, before)
	}
	n, err := applyMemoryLimit(func(k string) string { return map[string]string{MemoryLimitEnv: "2000000000"}[k] })
	if err != nil || n != 1800000000 {
		t.Fatalf("applyMemoryLimit = %d, %v", n, err)
	}
	if got := debug.SetMemoryLimit(-1); got != 1800000000 {
		t.Fatalf("runtime limit = %d, want 1800000000", got)
	}
}
