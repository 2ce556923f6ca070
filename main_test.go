package main

import (
	"flag"
	"io"
	"os"
	"slices"
	"testing"
)

// TestMain lets the test binary stand in for the tolokaforge binary when the
// code under test starts it as a subprocess (the runner spawns MCP servers as
// `tolokaforge mcp shop` with its SelfExecutable pointed at os.Args[0]).
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == "mcp" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		pos  []string
		out  string
		err  string
	}{
		{"flags after the name", []string{"camp", "--out", "d"}, []string{"camp"}, "d", ""},
		{"flags before and between", []string{"--out", "d", "a", "b"}, []string{"a", "b"}, "d", ""},
		{"no positionals", []string{"--out=d"}, nil, "d", ""},
		{"an unknown flag after a name", []string{"camp", "--outt", "d"}, nil, "", "flag provided but not defined: -outt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			out := fs.String("out", "", "")
			pos, err := parseInterspersed(fs, c.args)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(pos, c.pos) || *out != c.out {
				t.Fatalf("got %q --out %q (%v), want %q --out %q", pos, *out, err, c.pos, c.out)
			}
		})
	}
}
