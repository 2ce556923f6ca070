package grading

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	pb "tolokaforge.io/operator/api/execagentpb"
)

func TestParseRewardJSON(t *testing.T) {
	for _, tc := range []struct {
		in    string
		score float64
		how   string // substring; "" with err set
		err   string
	}{
		{in: `{"reward": 0.25, "x": 1}`, score: 0.25, how: "reward 0.25; components: x=1"},
		{in: `{"a": 1, "b": 0}`, score: 0.5, how: "mean of 2 rewards 0.5; components: a=1, b=0"},
		{in: `{"only": 1}`, score: 1, how: "components: only=1"},
		{in: `{}`, err: "empty object"},
		{in: `[1]`, err: "not a JSON object"},
		{in: `{"a": 2}`, err: `"a" is 2, not a number in [0, 1]`},
		{in: `{"a": -0.1}`, err: "not a number in [0, 1]"},
		{in: `{"a": null}`, err: "not a number in [0, 1]"},
		{in: `{"a": 1} {"a": 0}`, err: "more than one JSON value"},
	} {
		score, how, err := parseRewardJSON([]byte(tc.in))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.err)
			}
		case err != nil || score != tc.score || !strings.Contains(how, tc.how):
			t.Errorf("%s: %v %q %v, want %v %q", tc.in, score, how, err, tc.score, tc.how)
		}
	}
}

func TestPytestScore(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		score     float64
		how       string
	}{
		{"all passed", "noise\nPASSED early::ignored\n=== short test summary info ===\nPASSED t.py::a\nXFAIL t.py::b - reason\n", 1, "2 of 2 tests passed; components: t.py::a=PASSED, t.py::b=XFAIL"},
		{"one failed", "=== short test summary info ===\nPASSED t.py::a\nFAILED t.py::b - assert 0\n", 0, "1 of 2"},
		{"an error", "=== short test summary info ===\nERROR t.py - ImportError\n", 0, "t.py=ERROR"},
		{"xpass fails", "=== short test summary info ===\nXPASS t.py::a\n", 0, "0 of 1"},
		{"skipped only", "=== short test summary info ===\nSKIPPED [1] t.py:3: no\n", 0, "no test results"},
		{"no header", "PASSED t.py::a\n", 1, "1 of 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			score, how := pytestScore([]byte(tc.out))
			if score != tc.score || !strings.Contains(how, tc.how) {
				t.Errorf("got %v %q, want %v %q", score, how, tc.score, tc.how)
			}
		})
	}
}

func TestBuildTestsTar(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	arts := map[string]string{
		"tests/test.sh": b64("#!/bin/bash\n"), "tests/sub/data.txt": b64("d"),
		"run-tests.sh": b64("r"), "solution/solve.sh": b64("s"), "testsuite/x": b64("x"),
	}
	data, err := buildTestsTar(arts, []string{"tests", "run-tests.sh"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got[h.Name] = string(body)
		if h.Typeflag == tar.TypeReg && h.Mode != 0o755 {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	want := map[string]string{"test.sh": "#!/bin/bash\n", "sub/": "", "sub/data.txt": "d", "run-tests.sh": "r"}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, err := buildTestsTar(arts, []string{"nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("a missing tests entry: %v", err)
	}
}

func TestEnvOutput(t *testing.T) {
	if got := envOutput(&pb.ExecResponse{Stdout: []byte("out\n"), Stderr: []byte("err\n"), StdoutBytes: 4, StderrBytes: 4}); got != "out\n\n[stderr]\nerr" {
		t.Errorf("small: %q", got)
	}
	big := strings.Repeat("a", envReasonOutputBytes) + strings.Repeat("b", 100)
	got := envOutput(&pb.ExecResponse{Stdout: []byte(big), StdoutBytes: int64(len(big)) + 1000, StdoutTruncated: true})
	if !strings.Contains(got, "[... 1100 bytes cut ...]") || len(got) > envReasonOutputBytes+100 || !strings.HasSuffix(got, "b") {
		t.Errorf("big: %d bytes, %q...%q", len(got), got[:20], got[len(got)-20:])
	}
	if got := envOutput(&pb.ExecResponse{Stdout: []byte("ht"), StdoutBytes: 10, StdoutTruncated: true}); !strings.HasPrefix(got, "[8 bytes from the middle") {
		t.Errorf("cut upstream: %q", got)
	}
}
