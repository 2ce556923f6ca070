package imagebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Docker's naming rules and where each name's manifest is asked for.
func TestParseReference(t *testing.T) {
	pinned := "sha256:" + strings.Repeat("c", 64)
	rs := &Resolver{InsecureHosts: []string{"registry.internal:5000"}}
	for _, tc := range []struct {
		ref, host, repo, tag, digest, url string
	}{
		{"ubuntu:22.04", DockerHubHost, "library/ubuntu", "22.04", "", "https://registry-1.docker.io/v2/library/ubuntu/manifests/22.04"},
		{"ubuntu", DockerHubHost, "library/ubuntu", "latest", "", "https://registry-1.docker.io/v2/library/ubuntu/manifests/latest"},
		{"docker.io/library/python:3.12-slim", DockerHubHost, "library/python", "3.12-slim", "", "https://registry-1.docker.io/v2/library/python/manifests/3.12-slim"},
		{"docker.io/alpine:3", DockerHubHost, "library/alpine", "3", "", "https://registry-1.docker.io/v2/library/alpine/manifests/3"},
		{"someone/tool:v1", DockerHubHost, "someone/tool", "v1", "", "https://registry-1.docker.io/v2/someone/tool/manifests/v1"},
		{"ghcr.io/a/b:1", "ghcr.io", "a/b", "1", "", "https://ghcr.io/v2/a/b/manifests/1"},
		{"localhost:5000/x:y", "localhost:5000", "x", "y", "", "http://localhost:5000/v2/x/manifests/y"},
		{"localhost/x", "localhost", "x", "latest", "", "http://localhost/v2/x/manifests/latest"},
		{"127.0.0.1:5055/t/x:1", "127.0.0.1:5055", "t/x", "1", "", "http://127.0.0.1:5055/v2/t/x/manifests/1"},
		{"registry.internal:5000/x:1", "registry.internal:5000", "x", "1", "", "http://registry.internal:5000/v2/x/manifests/1"},
		{"registry.internal:5001/x:1", "registry.internal:5001", "x", "1", "", "https://registry.internal:5001/v2/x/manifests/1"},
		{"ghcr.io/a/b:1@" + pinned, "ghcr.io", "a/b", "1", pinned, ""},
		{"ubuntu@" + pinned, DockerHubHost, "library/ubuntu", "latest", pinned, ""},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			r, err := ParseReference(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if r.Host != tc.host || r.Repository != tc.repo || r.Tag != tc.tag || r.Digest != tc.digest {
				t.Errorf("got host %q repo %q tag %q digest %q", r.Host, r.Repository, r.Tag, r.Digest)
			}
			if r.Pinned() != (tc.digest != "") {
				t.Errorf("Pinned() = %v", r.Pinned())
			}
			if tc.url != "" {
				if got := rs.ManifestURL(r); got != tc.url {
					t.Errorf("manifest URL %s, want %s", got, tc.url)
				}
			}
		})
	}
	for _, bad := range []string{"Ubuntu:1", "x@sha256:abc", "x@md5:" + strings.Repeat("a", 32), "a//b", "x:", "ghcr.io/a/b:t@g"} {
		if _, err := ParseReference(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// An already pinned reference is returned as is and no registry is asked.
func TestPinAlreadyPinned(t *testing.T) {
	ref := "registry.invalid/x:1@sha256:" + strings.Repeat("d", 64)
	got, pinned, err := (&Resolver{}).Pin(context.Background(), ref)
	if err != nil || got != ref || pinned {
		t.Errorf("Pin(%q) = %q, %v, %v; want it unchanged", ref, got, pinned, err)
	}
}

// Resolution against fake registries: the digest header, GET when HEAD is
// refused or carries no digest, the anonymous bearer flow, a missing tag,
// an unreachable registry.
func TestResolve(t *testing.T) {
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)
	sum := sha256.Sum256(manifest)
	bodyDigest := "sha256:" + hex.EncodeToString(sum[:])
	headerDigest := "sha256:" + strings.Repeat("e", 64)
	const manifestPath = "/v2/team/app/manifests/1.0"

	checkAccept := func(t *testing.T, r *http.Request) {
		for _, want := range []string{"application/vnd.oci.image.index.v1+json", "application/vnd.oci.image.manifest.v1+json",
			"application/vnd.docker.distribution.manifest.list.v2+json", "application/vnd.docker.distribution.manifest.v2+json"} {
			if !strings.Contains(r.Header.Get("Accept"), want) {
				t.Errorf("%s %s: Accept lacks %s", r.Method, r.URL.Path, want)
			}
		}
	}
	type handler func(t *testing.T, srv *httptest.Server, w http.ResponseWriter, r *http.Request)
	for _, tc := range []struct {
		name    string
		h       handler
		want    string
		wantErr []string
		methods string
	}{
		{name: "digest header on HEAD", want: headerDigest, methods: "HEAD",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				checkAccept(t, r)
				if r.URL.Path != manifestPath || r.Method != http.MethodHead {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Docker-Content-Digest", headerDigest)
			}},
		{name: "HEAD 405 falls back to GET with the header", want: headerDigest, methods: "HEAD GET",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				checkAccept(t, r)
				if r.Method == http.MethodHead {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				w.Header().Set("Docker-Content-Digest", headerDigest)
				w.Write(manifest)
			}},
		{name: "GET without the header hashes the body", want: bodyDigest, methods: "HEAD GET",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead {
					w.WriteHeader(http.StatusMethodNotAllowed)
					return
				}
				w.Write(manifest)
			}},
		{name: "HEAD without the header: GET and hash", want: bodyDigest, methods: "HEAD GET",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				w.Write(manifest)
			}},
		{name: "anonymous bearer token", want: headerDigest, methods: "HEAD GET(token) HEAD",
			h: func(t *testing.T, srv *httptest.Server, w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/token":
					if r.URL.Query().Get("service") != "fake-registry" || r.URL.Query().Get("scope") != "repository:team/app:pull" {
						t.Errorf("token request %s", r.URL.RawQuery)
					}
					fmt.Fprint(w, `{"access_token":"tok-123"}`)
				case manifestPath:
					if r.Header.Get("Authorization") != "Bearer tok-123" {
						w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="fake-registry",scope="repository:team/app:pull"`, srv.URL))
						w.WriteHeader(http.StatusUnauthorized)
						return
					}
					w.Header().Set("Docker-Content-Digest", headerDigest)
				default:
					http.NotFound(w, r)
				}
			}},
		{name: "bearer token under token", want: headerDigest, methods: "HEAD GET(token) HEAD",
			h: func(t *testing.T, srv *httptest.Server, w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/auth" {
					fmt.Fprint(w, `{"token":"t2"}`)
					return
				}
				if r.Header.Get("Authorization") != "Bearer t2" {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/auth"`, srv.URL))
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				w.Header().Set("Docker-Content-Digest", headerDigest)
			}},
		{name: "basic auth is refused", wantErr: []string{"wants credentials"}, methods: "HEAD",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
				w.WriteHeader(http.StatusUnauthorized)
			}},
		{name: "no such tag", wantErr: []string{"404", "no such tag", "tag 1.0 of team/app"}, methods: "HEAD",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
			}},
		{name: "server error", wantErr: []string{"500"}, methods: "HEAD",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
			}},
		{name: "a bad digest header", wantErr: []string{"not a sha256 digest"}, methods: "HEAD",
			h: func(t *testing.T, _ *httptest.Server, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Docker-Content-Digest", "sha256:nope")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var methods []string
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				m := r.Method
				if r.URL.Path != manifestPath {
					m += "(token)"
				}
				methods = append(methods, m)
				tc.h(t, srv, w, r)
			}))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			ref := host + "/team/app:1.0"
			got, pinned, err := (&Resolver{}).Pin(context.Background(), ref)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Pin = %q, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q: %v", w, err)
					}
				}
			} else if err != nil || !pinned || got != ref+"@"+tc.want {
				t.Errorf("Pin = %q, %v, %v; want %s@%s", got, pinned, err, ref, tc.want)
			}
			if g := strings.Join(methods, " "); g != tc.methods {
				t.Errorf("requests %q, want %q", g, tc.methods)
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, _, err = (&Resolver{}).Pin(context.Background(), addr+"/x:1")
		if err == nil || !strings.Contains(err.Error(), "registry "+addr+" unreachable") {
			t.Errorf("unreachable registry: %v", err)
		}
	})
	t.Run("not found is ErrTagNotFound", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		defer srv.Close()
		_, _, err := (&Resolver{}).Pin(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/x:1")
		if !errors.Is(err, ErrTagNotFound) {
			t.Errorf("%v is not ErrTagNotFound", err)
		}
	})
}

func TestParseChallenge(t *testing.T) {
	s, p := parseChallenge(`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull,push"`)
	if s != "Bearer" || p["realm"] != "https://auth.docker.io/token" || p["service"] != "registry.docker.io" || p["scope"] != "repository:library/ubuntu:pull,push" {
		t.Errorf("%q %v", s, p)
	}
	s, p = parseChallenge(`Bearer realm=http://x/t, service=svc`)
	if s != "Bearer" || p["realm"] != "http://x/t" || p["service"] != "svc" {
		t.Errorf("%q %v", s, p)
	}
}

// The builder's resolver talks plain HTTP to its own registry only when
// --insecure-registry; loopback always.
func TestBuilderResolver(t *testing.T) {
	for _, tc := range []struct {
		registry string
		insecure bool
		host     string
		scheme   string
	}{
		{"reg.example:5000/path", true, "reg.example:5000", "http"},
		{"reg.example:5000", false, "reg.example:5000", "https"},
		{"reg.example:5000", true, "other.example:5000", "https"},
		{"reg.example:5000", false, "[::1]:5000", "http"},
		{"reg.example:5000", false, "127.0.0.1", "http"},
	} {
		b, err := New(Options{Registry: tc.registry, Insecure: tc.insecure, LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Resolver().Scheme(tc.host); got != tc.scheme {
			t.Errorf("registry %s insecure %v: %s is %s, want %s", tc.registry, tc.insecure, tc.host, got, tc.scheme)
		}
	}
}
