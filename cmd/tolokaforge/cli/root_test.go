package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"tolokaforge.io/operator/examples/shop"
)

// TestMain lets the test binary stand in for the tolokaforge binary when the
// code under test starts it as a subprocess (the runner spawns MCP servers as
// `tolokaforge mcp shop` with its SelfExecutable pointed at os.Args[0]), and
// runs the tests from the repository's root, where their fixtures'
// paths (examples/..., api/...) start.
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == "mcp" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if err := os.Chdir(filepath.Join("..", "..", "..")); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// Flags stand anywhere among the positional arguments (`results pull NAME
// --out DIR`, as kubectl takes them), with one dash or two.
func TestFlagsAmongArguments(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
		err  string
	}{
		{"flags after the name", []string{"shop", "--state", "d"}, "d", ""},
		{"one dash, as the flag package took it", []string{"shop", "-state=d"}, "d", ""},
		{"before the subcommand's name", []string{"--state", "d", "shop"}, "d", ""},
		{"an unknown flag", []string{"shop", "--statee", "d"}, "", "tolokaforge mcp: mcp shop: unknown flag: --statee"},
		{"an extra argument", []string{"shop", "extra"}, "", `tolokaforge mcp: mcp shop: unexpected arguments ["extra"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got shop.Options
			var stdout, stderr bytes.Buffer
			d := &deps{stdout: &stdout, stderr: &stderr, serveShop: func(_ context.Context, o shop.Options) error { got = o; return nil }}
			code := execute(context.Background(), d, append([]string{"mcp"}, c.args...))
			if c.err != "" {
				if code != 1 || !strings.HasSuffix(stderr.String(), c.err+"\n") {
					t.Fatalf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), c.err)
				}
				return
			}
			if code != 0 || got.StatePath != c.want {
				t.Fatalf("exit %d (%s), --state %q; want 0 and %q", code, stderr.String(), got.StatePath, c.want)
			}
		})
	}
}

// Help, the version, unknown commands and completion: what each prints
// and its exit status.
func TestRootCommand(t *testing.T) {
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{"no command: the usage", nil, 0, []string{"Usage:\n  tolokaforge [command]", "trial", "pack", "completion"}, nil},
		{"--help", []string{"--help"}, 0, []string{"Usage:\n  tolokaforge [command]"}, nil},
		{"help", []string{"help"}, 0, []string{"Available Commands:"}, nil},
		{"trial run --help", []string{"trial", "run", "--help"}, 0, []string{"tolokaforge trial run --task FILE|PACK|PROJECT [flags]", "--task string", "--mcp-command KEY=VALUE"}, nil},
		{"help of a pod command", []string{"runner", "--help"}, 0, []string{"tolokaforge runner [flags]", "--listen string", "--tool-rlimit-as uint"}, nil},
		{"results pull's kubeconfig flags", []string{"results", "pull", "-h"}, 0, []string{"--kubeconfig string", "--context string", "-n, --namespace string"}, nil},
		{"version", []string{"version"}, 0, []string{"tolokaforge " + defaultVersion + " (engine protocol "}, nil},
		{"--version", []string{"--version"}, 0, []string{"tolokaforge " + defaultVersion}, nil},
		{"an unknown command", []string{"bogus"}, 2, nil, []string{"tolokaforge: unknown command \"bogus\"\n", "Usage:"}},
		{"an unknown flag of the binary", []string{"--bogus"}, 1, nil, []string{"tolokaforge: unknown flag: --bogus\n"}},
		{"an unknown flag of a command", []string{"trial", "run", "--tsk", "x"}, 1, nil, []string{"tolokaforge trial: trial run: unknown flag: --tsk\n"}},
		{"a missing subcommand", []string{"pack"}, 1, nil, []string{"Usage:\n  tolokaforge pack [flags]", "tolokaforge pack: pack: a subcommand is required: import, build or validate\n"}},
		{"bash completion", []string{"completion", "bash"}, 0, []string{"# bash completion V2 for tolokaforge"}, nil},
		{"zsh completion", []string{"completion", "zsh"}, 0, []string{"#compdef tolokaforge"}, nil},
		{"fish completion", []string{"completion", "fish"}, 0, []string{"# fish completion for tolokaforge"}, nil},
		{"completing a subcommand", []string{"__complete", "tr"}, 0, []string{"trial\t"}, nil},
		{"completing a flag", []string{"__complete", "trial", "run", "--mo"}, 0, []string{"--model-config\t"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, stdout.String(), stderr.String())
			}
			for _, want := range c.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// Every command has a short description and its own --help.
func TestEveryCommandHasHelp(t *testing.T) {
	root := newRootCommand(&deps{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%s has no Short", c.CommandPath())
		}
		var stdout bytes.Buffer
		args := append(strings.Fields(commandName(c)), "--help")
		if !c.HasParent() {
			args = []string{"--help"}
		}
		if code := run(args, &stdout, &stdout); code != 0 || !strings.Contains(stdout.String(), "Usage:") {
			t.Errorf("%q: exit %d:\n%s", args, code, stdout.String())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// Installed as kubectl-tolokaforge on the PATH, the binary is a kubectl
// plugin: `kubectl tolokaforge version` runs it. The test builds the binary
// and runs the repository's kubectl (bin/k8s/kubectl, which
// hack/build-envtest.sh builds, or kubectl in $KUBEBUILDER_ASSETS); without
// one it runs the binary as kubectl would (argv[0] the plugin's name) and
// says that kubectl itself was not exercised.
func TestKubectlPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	plugin := filepath.Join(dir, "kubectl-tolokaforge")
	build := exec.Command("go", "build", "-o", plugin, "./cmd/tolokaforge")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tolokaforge: %v\n%s", err, out)
	}
	kubectl := findKubectl()
	var cmd *exec.Cmd
	if kubectl == "" {
		t.Log("no kubectl (bin/k8s/kubectl or $KUBEBUILDER_ASSETS/kubectl; hack/build-envtest.sh builds it): running the plugin as kubectl would")
		cmd = &exec.Cmd{Path: plugin, Args: []string{"kubectl-tolokaforge", "version"}}
	} else {
		cmd = exec.Command(kubectl, "tolokaforge", "version")
	}
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+filepath.Join(dir, "none"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "tolokaforge v") || !strings.Contains(string(out), "(engine protocol ") {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	// Its help names it as the user typed it.
	help := &exec.Cmd{Path: plugin, Args: []string{"kubectl-tolokaforge", "--help"}}
	if kubectl != "" {
		help = exec.Command(kubectl, "tolokaforge", "--help")
	}
	help.Env = cmd.Env
	out, err = help.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kubectl tolokaforge [command]") {
		t.Fatalf("%s: %v\n%s", help, err, out)
	}
	if kubectl == "" {
		t.Skip("the plugin answered as kubectl-tolokaforge, but kubectl itself was not run: build it with hack/build-envtest.sh")
	}
}

// findKubectl is the repository's kubectl, or "".
func findKubectl() string {
	for _, p := range []string{filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), filepath.Join("bin", "k8s", "kubectl")} {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" && strings.HasPrefix(p, "kubectl") {
			continue
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			abs, err := filepath.Abs(p)
			if err == nil {
				return abs
			}
		}
	}
	return ""
}
