package podsim

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

var discard = logr.Discard()

// Cases mirror kubelet's expansion tests so behaviour matches a real node.
func TestExpand(t *testing.T) {
	vars := map[string]string{
		"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": "",
		"POD_IP": "127.0.0.7",
	}
	cases := []struct{ name, in, want string }{
		{"whole string", "$(VAR_A)", "A"},
		{"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
		{"middle", "___$(VAR_B)___", "___B___"},
		{"compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
		{"escape and expand", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
		{"compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
		{"mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"},
		{"backslash ignored", "foo\\$(VAR_C)bar", "foo\\Cbar"},
		{"nested references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
		{"nested second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"value is a reference, not re-expanded", "$(VAR_REF)", "$(VAR_A)"},
		{"empty var", "foo$(VAR_EMPTY)bar", "foobar"},
		{"unterminated", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
		{"shell specials", "$?_boo_$!", "$?_boo_$!"},
		{"bare operator", "$VAR_A", "$VAR_A"},
		{"undefined passes through", "$(VAR_DNE)", "$(VAR_DNE)"},
		{"even operators undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
		{"odd operators defined", "$$$$$$$(VAR_A)", "$$$A"},
		{"shell syntax ignored", "${VAR_A}", "${VAR_A}"},
		{"trailing incomplete", "$(VAR_B)_______$(A", "B_______$(A"},
		{"trailing empty incomplete", "$(VAR_C)_______$(", "C_______$("},
		{"operator at end", "$(VAR_A)foobarzab$", "Afoobarzab$"},
		{"lots of openers", "--$($($($($--", "--$($($($($--"},
		{"escaped operator inside name", "$(foo$$var)", "$(foo$$var)"},
		{"non-ascii after operator", "prefix-$€-suffix", "prefix-$€-suffix"},
		{"listen flag", "--listen=$(POD_IP):8080", "--listen=127.0.0.7:8080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := expand(tc.in, vars); got != tc.want {
				t.Fatalf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$(A)", "$$(A)", "$(", "$", "x$(A$(B))y", "$€", "--listen=$(POD_IP):1", "\xff$(\xfe)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// With no variables defined, expansion can only remove escape '$'s.
		out := expand(in, nil)
		if len(out) > len(in) {
			t.Fatalf("expand(%q, nil) = %q grew", in, out)
		}
		if !strings.Contains(in, "$") && out != in {
			t.Fatalf("expand(%q) changed input without '$': %q", in, out)
		}
		// A value is inserted verbatim and never re-expanded.
		if got := expand("$(A)", map[string]string{"A": in}); got != in {
			t.Fatalf("expand($(A)) with A=%q = %q", in, got)
		}
	})
}
