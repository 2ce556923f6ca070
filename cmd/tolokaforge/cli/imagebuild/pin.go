package imagebuild

// Pinning a task's own image (`[environment] docker_image`): the tag the
// task names is resolved to its manifest digest once, at `pack build`, and
// the Task carries NAME:TAG@sha256:..., so every Trial pulls the same image
// (containerd pulls by the digest; the tag stays for the reader).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DockerHubHost is the registry API host of Docker Hub, the registry of
// a reference whose first component names no host.
const DockerHubHost = "registry-1.docker.io"

// Reference is an image reference split the way Docker does.
type Reference struct {
	// Given is the reference as written.
	Given string
	// Host is the registry's API host[:port] (Docker Hub's is
	// registry-1.docker.io).
	Host string
	// Repository is the repository's path in the registry (Docker Hub's
	// official images under library/).
	Repository string
	// Tag is the tag ("latest" when none is given); Digest the digest,
	// "" when none is given.
	Tag, Digest string
}

var (
	repoPathRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	tagRE      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	hostRE     = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?$`)
)

// ParseReference splits ref by Docker's rules: a first component with a
// dot or a colon, or "localhost", is the registry host; otherwise the
// image is Docker Hub's (one-component names under library/).
func ParseReference(ref string) (Reference, error) {
	r := Reference{Given: ref}
	name := ref
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, r.Digest = name[:i], name[i+1:]
		if !digestRE.MatchString(r.Digest) {
			return r, fmt.Errorf("image %q: %q is not a sha256 digest", ref, r.Digest)
		}
	}
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "/") {
		name, r.Tag = name[:i], name[i+1:]
		if !tagRE.MatchString(r.Tag) {
			return r, fmt.Errorf("image %q: %q is not a tag", ref, r.Tag)
		}
	}
	if r.Tag == "" {
		r.Tag = "latest"
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if !hostRE.MatchString(first) {
			return r, fmt.Errorf("image %q: %q is not a registry host", ref, first)
		}
		r.Host, r.Repository = first, rest
	} else {
		r.Host, r.Repository = "docker.io", name
	}
	switch r.Host {
	case "docker.io", "index.docker.io", DockerHubHost:
		r.Host = DockerHubHost
		if !strings.Contains(r.Repository, "/") {
			r.Repository = "library/" + r.Repository
		}
	}
	if !repoPathRE.MatchString(r.Repository) {
		return r, fmt.Errorf("image %q: %q is not a repository name", ref, r.Repository)
	}
	return r, nil
}

// Pinned reports whether the reference names a sha256 digest.
func (r Reference) Pinned() bool { return r.Digest != "" }

// Resolver asks registries which manifest a tag names.
type Resolver struct {
	// Client does the requests; nil: a client with a 30 s timeout.
	Client *http.Client
	// InsecureHosts are host[:port]s talked to over plain HTTP (pack
	// build's own registry with --insecure-registry); loopback hosts
	// always are.
	InsecureHosts []string
}

// Resolver is a resolver that talks plain HTTP to this builder's registry
// when it is insecure, with its client.
func (b *Builder) Resolver() *Resolver {
	r := &Resolver{Client: b.o.Client}
	if b.o.Insecure {
		host, _ := b.registryHost()
		r.InsecureHosts = []string{host}
	}
	return r
}

func (rs *Resolver) client() *http.Client {
	if rs.Client != nil {
		return rs.Client
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Scheme is "http" for an insecure or loopback host, else "https".
func (rs *Resolver) Scheme(host string) string {
	for _, h := range rs.InsecureHosts {
		if strings.EqualFold(h, host) {
			return "http"
		}
	}
	if isLoopback(host) {
		return "http"
	}
	return "https"
}

func isLoopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ManifestURL is where the reference's tag is asked for.
func (rs *Resolver) ManifestURL(r Reference) string {
	return fmt.Sprintf("%s://%s/v2/%s/manifests/%s", rs.Scheme(r.Host), r.Host, r.Repository, r.Tag)
}

// ErrTagNotFound is the answer for a tag (or repository) the registry does
// not have.
var ErrTagNotFound = errors.New("the registry has no such tag")

// Pin returns ref pinned to the digest its tag names now: ref@sha256:...
// (the tag kept), or ref itself when it already names a digest (nothing
// is asked). pinned is false then.
func (rs *Resolver) Pin(ctx context.Context, ref string) (out string, pinned bool, err error) {
	r, err := ParseReference(ref)
	if err != nil {
		return "", false, err
	}
	if r.Pinned() {
		return ref, false, nil
	}
	d, err := rs.Resolve(ctx, r)
	if err != nil {
		return "", false, err
	}
	return ref + "@" + d, true, nil
}

// maxManifest bounds a manifest read to hash it.
const maxManifest = 4 << 20

// Resolve returns the digest of the manifest the reference's tag names:
// a HEAD (a GET when the registry refuses HEAD with 405, or answers
// without Docker-Content-Digest: then the SHA-256 of the body), with the
// anonymous bearer token flow when the registry asks for one.
func (rs *Resolver) Resolve(ctx context.Context, r Reference) (string, error) {
	u := rs.ManifestURL(r)
	var token string
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		resp, err := rs.manifest(ctx, method, u, token)
		if err != nil {
			return "", err
		}
		if resp.StatusCode == http.StatusUnauthorized && token == "" {
			challenge := resp.Header.Get("WWW-Authenticate")
			drain(resp)
			if token, err = rs.anonymousToken(ctx, r, challenge); err != nil {
				return "", fmt.Errorf("registry %s: %s %s: 401: %w", r.Host, method, u, err)
			}
			if resp, err = rs.manifest(ctx, method, u, token); err != nil {
				return "", err
			}
		}
		switch resp.StatusCode {
		case http.StatusOK:
			if d := resp.Header.Get("Docker-Content-Digest"); d != "" {
				drain(resp)
				if !digestRE.MatchString(d) {
					return "", fmt.Errorf("registry %s: %s %s: Docker-Content-Digest %q is not a sha256 digest", r.Host, method, u, d)
				}
				return d, nil
			}
			if method == http.MethodHead {
				drain(resp)
				continue // no digest header: hash the body
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifest+1))
			resp.Body.Close()
			if err != nil {
				return "", fmt.Errorf("registry %s: GET %s: %w", r.Host, u, err)
			}
			if len(body) > maxManifest {
				return "", fmt.Errorf("registry %s: GET %s: manifest larger than %d bytes", r.Host, u, maxManifest)
			}
			sum := sha256.Sum256(body)
			return "sha256:" + hex.EncodeToString(sum[:]), nil
		case http.StatusMethodNotAllowed:
			drain(resp)
			if method == http.MethodHead {
				continue
			}
		case http.StatusNotFound:
			drain(resp)
			return "", fmt.Errorf("registry %s: %s %s: %s: %w (tag %s of %s)", r.Host, method, u, resp.Status, ErrTagNotFound, r.Tag, r.Repository)
		default:
			drain(resp)
		}
		return "", fmt.Errorf("registry %s: %s %s: %s", r.Host, method, u, resp.Status)
	}
	return "", fmt.Errorf("registry %s: %s: no answer with a digest", r.Host, u)
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

func (rs *Resolver) manifest(ctx context.Context, method, u, token string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", manifestAccept)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := rs.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the method and URL are said once, here
		}
		return nil, fmt.Errorf("registry %s unreachable: %s %s: %w", req.URL.Host, method, u, err)
	}
	return resp, nil
}

// anonymousToken follows a Bearer challenge without credentials: GET
// realm?service=...&scope=... and its "token" (or "access_token").
func (rs *Resolver) anonymousToken(ctx context.Context, r Reference, challenge string) (string, error) {
	scheme, params := parseChallenge(challenge)
	if !strings.EqualFold(scheme, "bearer") || params["realm"] == "" {
		return "", fmt.Errorf("the registry wants credentials (WWW-Authenticate %q); only anonymous pulls can be pinned", challenge)
	}
	realm, err := url.Parse(params["realm"])
	if err != nil || (realm.Scheme != "https" && realm.Scheme != "http") {
		return "", fmt.Errorf("token realm %q is not an http(s) URL", params["realm"])
	}
	q := realm.Query()
	if s := params["service"]; s != "" {
		q.Set("service", s)
	}
	scope := params["scope"]
	if scope == "" {
		scope = "repository:" + r.Repository + ":pull"
	}
	q.Set("scope", scope)
	realm.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := rs.client().Do(req)
	if err != nil {
		return "", fmt.Errorf("token service unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("token service: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token service GET %s: %s (the image is not anonymously pullable?)", realm, resp.Status)
	}
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		return "", fmt.Errorf("token service GET %s: %w", realm, err)
	}
	if tok.Token != "" {
		return tok.Token, nil
	}
	if tok.AccessToken != "" {
		return tok.AccessToken, nil
	}
	return "", fmt.Errorf("token service GET %s: no token in the answer", realm)
}

// parseChallenge splits `Bearer realm="...",service="...",scope="..."`.
func parseChallenge(h string) (scheme string, params map[string]string) {
	h = strings.TrimSpace(h)
	scheme, rest, _ := strings.Cut(h, " ")
	params = map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var val string
		if strings.HasPrefix(after, `"`) {
			// A quoted value may hold commas (a scope of several actions).
			var b strings.Builder
			i := 1
			for ; i < len(after) && after[i] != '"'; i++ {
				if after[i] == '\\' && i+1 < len(after) {
					i++
				}
				b.WriteByte(after[i])
			}
			val, rest = b.String(), after[min(i+1, len(after)):]
		} else {
			val, rest, _ = strings.Cut(after, ",")
			val = strings.TrimSpace(val)
			rest = "," + rest
		}
		params[key] = val
		rest = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ","))
	}
	return scheme, params
}
