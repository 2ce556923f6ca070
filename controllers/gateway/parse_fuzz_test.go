package gateway

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// parseToken accepts exactly what NewToken makes: any accepted token is
// <DNS-1123 label>/<DNS-1123 subdomain>/<64 lowercase hex>, and every token
// NewToken mints for a valid Trial name is accepted with that name.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"team-a/t1/" + strings.Repeat("ab", 32), "abc", "a/b/c", "//", "a/b/" + strings.Repeat("G", 64),
		"a/" + strings.Repeat("b", 254) + "/" + strings.Repeat("0", 64), "a/b.c-d/" + strings.Repeat("f", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		key, ok := parseToken(tok)
		if ok {
			parts := strings.Split(tok, "/")
			if len(tok) > maxTokenLen || len(parts) != 3 || parts[0] != key.Namespace || parts[1] != key.Name ||
				len(validation.IsDNS1123Label(key.Namespace)) > 0 || len(validation.IsDNS1123Subdomain(key.Name)) > 0 ||
				len(parts[2]) != randomHexLen || strings.Trim(parts[2], "0123456789abcdef") != "" {
				t.Fatalf("accepted %q as %v", tok, key)
			}
		}
		// A token minted for the parsed-out name (when it is a valid Trial) parses back.
		if ok {
			minted, err := NewToken(types.NamespacedName{Namespace: key.Namespace, Name: key.Name})
			if err != nil {
				t.Fatal(err)
			}
			if back, ok := parseToken(minted); !ok || back != key {
				t.Fatalf("minted %q parses as %v %v", minted, back, ok)
			}
		}
	})
}
