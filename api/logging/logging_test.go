package logging

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr string
	}{
		{"error", -1, ""}, {"INFO", 0, ""}, {"debug", 1, ""}, {"4", 4, ""},
		{"-2", 0, `--log-level "-2": want error, info, debug or a verbosity >= 0`},
		{"loud", 0, `--log-level "loud": want error, info, debug or a verbosity >= 0`},
	} {
		got, err := ParseLevel(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseLevel(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseLevel(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestNewErrorLevelKeepsOnlyErrors(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, -1).WithName("svc").WithValues("k", "v")
	l.Info("hidden")
	l.Error(errors.New("boom"), "shown")
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, `"msg":"shown"`) || !strings.Contains(out, `"error":"boom"`) || !strings.Contains(out, `"logger":"svc"`) {
		t.Fatalf("output = %s", out)
	}
}

func TestNewVerbosity(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, 0)
	l.Info("info line")
	l.V(1).Info("debug line")
	if out := buf.String(); !strings.Contains(out, "info line") || strings.Contains(out, "debug line") {
		t.Fatalf("output = %s", out)
	}
}
