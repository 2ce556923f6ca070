package llm

import (
	"fmt"
	"net/url"
	"strings"
)

// Redacted replaces the API key wherever it would leave this package.
const Redacted = "[REDACTED]"

// minSecretLen: a "key" shorter than this is a placeholder for a keyless
// endpoint ("x", "none"); replacing it everywhere would mangle messages.
const minSecretLen = 8

type redactor struct{ secrets []string }

func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

func (r redactor) apply(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, Redacted)
	}
	return s
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", s)
	}
	return nil
}
