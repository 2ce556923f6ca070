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

type redactor struct{ secret string }

func newRedactor(key string) redactor {
	if len(key) < minSecretLen {
		return redactor{}
	}
	return redactor{secret: key}
}

func (r redactor) apply(s string) string {
	if r.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, r.secret, Redacted)
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
