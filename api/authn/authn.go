package authn

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	// tokenBytes is the entropy of a token.
	tokenBytes = 32
	// MetadataKey is the gRPC metadata key carrying the token (gRPC keys are
	// lower case).
	MetadataKey = "authorization"
	// Header is the HTTP header carrying the token.
	Header = "Authorization"
	// scheme prefixes the token in both.
	scheme = "Bearer "
	// maxTokenFileBytes bounds what ReadTokenFile reads: a token is 43 bytes.
	maxTokenFileBytes = 4 << 10
)

// SecretKey is the key of the token in the per-attempt Secret, and the file
// name it is mounted as.
const SecretKey = "token"

// ErrMissing and ErrMismatch say why a call was refused; callers turn them
// into Unauthenticated / 401 without the presented value.
var (
	ErrMissing  = errors.New("no bearer token presented")
	ErrMismatch = errors.New("the bearer token does not match this trial's credential")
)

// NewToken returns a fresh random token (TokenBytes from crypto/rand,
// base64url without padding, so it is a valid header value as is).
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("authn: generate token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ReadTokenFile reads a mounted token. Surrounding whitespace is ignored (a
// hand-written file ends with a newline); an empty or oversized file is an
// error. The error names the file, never its content.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("authn: read token file: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("authn: read token file %s: %w", path, err)
	}
	if len(raw) > maxTokenFileBytes {
		return "", fmt.Errorf("authn: token file %s is larger than %d bytes", path, maxTokenFileBytes)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return "", fmt.Errorf("authn: token file %s is empty", path)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("authn: token file %s holds more than one word; want one token", path)
	}
	return tok, nil
}

// Bearer is the header / metadata value presenting token.
func Bearer(token string) string { return scheme + token }

// Check verifies an Authorization value against want. The comparison is over
// SHA-256 digests with subtle.ConstantTimeCompare, so neither the content nor
// the length of want leaks through timing.
func Check(authorization, want string) error {
	if authorization == "" {
		return ErrMissing
	}
	got, ok := strings.CutPrefix(authorization, scheme)
	if !ok {
		// Scheme names are case-insensitive (RFC 9110 §11.1).
		if len(authorization) >= len(scheme) && strings.EqualFold(authorization[:len(scheme)], scheme) {
			got = authorization[len(scheme):]
		} else {
			return ErrMismatch
		}
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 || want == "" {
		return ErrMismatch
	}
	return nil
}
