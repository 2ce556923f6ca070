//go:build dev

package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The docs' checks run in the -tags dev build, whose command tree is the
// whole one (`dev` included); make test runs it.

// docs/cli is the reference the command tree writes (make docs).
func TestCLIReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := WriteReference(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	have, _ := filepath.Glob(filepath.Join("docs", "cli", "*.md"))
	names := func(fs []string) []string {
		var out []string
		for _, f := range fs {
			out = append(out, filepath.Base(f))
		}
		return out
	}
	if fmt.Sprint(names(want)) != fmt.Sprint(names(have)) {
		t.Fatalf("docs/cli is stale (run make docs): pages %v, want %v", names(have), names(want))
	}
	for _, f := range want {
		w, _ := os.ReadFile(f)
		h, err := os.ReadFile(filepath.Join("docs", "cli", filepath.Base(f)))
		if err != nil || !bytes.Equal(w, h) {
			t.Errorf("docs/cli/%s is stale (run make docs)", filepath.Base(f))
		}
	}
}

// docPages are README.md and docs/*.md (the generated reference aside).
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, pages...)
}

var (
	// A command line of the binary: tolokaforge, bin/tolokaforge,
	// bin/tolokaforge-dev or kubectl tolokaforge, then its words.
	commandLine = regexp.MustCompile("(?:^|[\\s`(/])(?:kubectl )?tolokaforge(?:-dev)?((?: +[^\\s`|;&#)]+)*)")
	longFlag    = regexp.MustCompile(`(?:^|[\s` + "`" + `(\[,/])--([a-z][a-z0-9-]*[a-z0-9])`)
)

// foreignFlags are the flags the docs show of other programs (kubectl,
// helm, kube-apiserver, kube-router, go test, ...), never the binary's.
var foreignFlags = map[string]bool{
	"server-side": true, "for": true, "timeout": true, "from-literal": true, "set": true, "create-namespace": true,
	"authorization-mode": true, "run-firewall": true, "run-router": true, "run-service-proxy": true,
	"cleanup-config": true, "name": true, "tags": true, "all": true, "fsys-tarfile": true, "cpuprofile": true,
	"bounding-set": true, // setpriv's, in docs/security-python.md
	// buildah's, mmdebstrap's and apt-get's (docs/e2e.md, pack build's
	// image side), the exec agent's and test/nodecluster's cluster command's.
	"pull": true, "layers": true, "isolation": true, "variant": true, "no-install-recommends": true,
	"install": true, "registry-port": true, "registry-dir": true,
	"type":        true, // kubectl patch's, in docs/observability.md
	"otlp-listen": true, // the fake LLM's (test/fakellm), in docs/observability.md
}

// flagsOf is every long flag c takes (its own and inherited).
func flagsOf(c *cobra.Command) map[string]bool {
	out := map[string]bool{"help": true} // cobra adds --help when it runs a command
	c.Flags().VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { out[f.Name] = true })
	return out
}

// checkDocCommands returns a problem for every command line of text that
// names no command of root or a flag its command does not take, and for
// every other --flag of text that no command takes and is not foreign.
func checkDocCommands(name, text string, root *cobra.Command) []string {
	var probs []string
	all := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for f := range flagsOf(c) {
			all[f] = true
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s:%d", name, i+1)
		checked := map[string]bool{}
		for _, m := range commandLine.FindAllStringSubmatch(line, -1) {
			words := strings.Fields(m[1])
			c := root
			for len(words) > 0 {
				sub := findSub(c, words[0])
				if sub == nil {
					break
				}
				c, words = sub, words[1:]
			}
			if c == root && len(words) > 0 && !strings.HasPrefix(words[0], "-") && isCommandWord(words[0]) {
				probs = append(probs, fmt.Sprintf("%s: tolokaforge %s: no such command", where, words[0]))
				for _, w := range words {
					fl, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
					checked[fl] = true
				}
				continue
			}
			flags := flagsOf(c)
			for _, w := range words {
				if !strings.HasPrefix(w, "--") || len(w) < 4 {
					continue
				}
				fl, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
				fl = strings.TrimRight(fl, ".,:")
				checked[fl] = true
				if !flags[fl] {
					probs = append(probs, fmt.Sprintf("%s: %s takes no flag --%s", where, c.CommandPath(), fl))
				}
			}
		}
		for _, m := range longFlag.FindAllStringSubmatch(line, -1) {
			fl := m[1]
			if checked[fl] || all[fl] || foreignFlags[fl] {
				continue
			}
			probs = append(probs, fmt.Sprintf("%s: --%s is no flag of any tolokaforge command (nor listed in foreignFlags)", where, fl))
		}
	}
	return probs
}

// isCommandWord says whether w reads as a subcommand's name rather than
// prose ("tolokaforge binary", "tolokaforge:VERSION").
func isCommandWord(w string) bool {
	return regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(w) && !proseWords[w]
}

// proseWords follow "tolokaforge" in the docs' sentences without being a
// command.
var proseWords = map[string]bool{"binary": true, "is": true, "and": true, "runs": true, "the": true, "in": true,
	"image": true, "operator": true, "itself": true, "or": true, "with": true, "on": true, "as": true, "from": true}

func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}

// Every tolokaforge command line and --flag the README and docs/ show is
// one the command tree has: a removed command or flag fails here.
func TestDocsShowOnlyCommandsAndFlagsThatExist(t *testing.T) {
	root := newRootCommand(&deps{})
	var probs []string
	for _, p := range docPages(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		probs = append(probs, checkDocCommands(p, string(b), root)...)
	}
	sort.Strings(probs)
	for _, p := range probs {
		t.Error(p)
	}
}

// The check itself, on planted lines.
func TestPlantedDocCommandsFail(t *testing.T) {
	root := newRootCommand(&deps{})
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"a good line", "`bin/tolokaforge trial run --task x --agent oracle`\n", nil},
		{"kubectl's plugin", "kubectl tolokaforge results pull camp -n evals --out dir\n", nil},
		{"a flag of another command", "bin/tolokaforge report --artifacts d --task x\n", []string{"x.md:1: tolokaforge report takes no flag --task"}},
		{"a removed command", "tolokaforge frobnicate --now\n", []string{"x.md:1: tolokaforge frobnicate: no such command"}},
		{"a flag in prose", "pass `--no-such-flag` to it\n", []string{"x.md:1: --no-such-flag is no flag of any tolokaforge command"}},
		{"another program's flag", "kubectl apply --server-side -f -\n", nil},
		{"prose after the name", "the tolokaforge binary runs\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := checkDocCommands("x.md", c.text, root)
			if fmt.Sprint(got) != fmt.Sprint(c.want) && !(len(got) == len(c.want) && allPrefixed(got, c.want)) {
				t.Fatalf("problems %q, want %q", got, c.want)
			}
		})
	}
}

func allPrefixed(got, want []string) bool {
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}
