package authn_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/authn"
)

func TestNewTokenIsRandomAndHeaderSafe(t *testing.T) {
	a, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two tokens are equal: %q", a)
	}
	if len(a) != 43 { // 32 bytes, base64url without padding
		t.Fatalf("token length = %d, want 43", len(a))
	}
	if strings.ContainsAny(a, " +/=\n") {
		t.Fatalf("token %q is not base64url", a)
	}
}

func TestCheck(t *testing.T) {
	const want = "s3cret"
	for _, tc := range []struct {
		name, auth string
		err        error
	}{
		{"right", "Bearer s3cret", nil},
		{"scheme case-insensitive", "bearer s3cret", nil},
		{"missing", "", authn.ErrMissing},
		{"wrong", "Bearer s3cres", authn.ErrMismatch},
		{"prefix of the token", "Bearer s3cre", authn.ErrMismatch},
		{"no scheme", "s3cret", authn.ErrMismatch},
		{"basic", "Basic s3cret", authn.ErrMismatch},
		{"empty token", "Bearer ", authn.ErrMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := authn.Check(tc.auth, want); !errors.Is(err, tc.err) {
				t.Fatalf("Check(%q) = %v, want %v", tc.auth, err, tc.err)
			}
		})
	}
	if err := authn.Check("Bearer ", ""); !errors.Is(err, authn.ErrMismatch) {
		t.Fatalf("an empty expected token must match nothing, got %v", err)
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := authn.ReadTokenFile(write("ok", "abc\n")); err != nil || tok != "abc" {
		t.Fatalf("ReadTokenFile = %q, %v; want abc", tok, err)
	}
	for _, tc := range []struct{ name, content, msg string }{
		{"empty", " \n", "is empty"},
		{"two words", "abc def", "more than one word"},
		{"huge", strings.Repeat("x", 5000), "larger than"},
	} {
		_, err := authn.ReadTokenFile(write(tc.name, tc.content))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("%s: err = %v, want it to say %q", tc.name, err, tc.msg)
		}
		if strings.Contains(err.Error(), "abc") {
			t.Fatalf("%s: the error leaks the file's content: %v", tc.name, err)
		}
	}
	if _, err := authn.ReadTokenFile(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("absent file: err = %v, want it named", err)
	}
}
