// Package s3server starts a real S3-compatible server in process for tests:
// gofakes3 with its in-memory backend behind an httptest listener on
// loopback. Clients reach it over HTTP with the AWS SDK, as they would a
// bucket; nothing of the client is mocked.
//
// Imports: the standard library and github.com/johannesboyne/gofakes3.
package s3server

import (
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Test credentials, put into the standard AWS environment by Start.
const (
	AccessKeyID     = "tolokaforge-test-key"
	SecretAccessKey = "tolokaforge-test-secret-do-not-log"
	region          = "us-east-1"
)

// Server is a running S3-compatible server.
type Server struct {
	// Endpoint is its http://127.0.0.1:port.
	Endpoint string
	Backend  *s3mem.Backend
	srv      *httptest.Server
}

// Start serves the named buckets until the test ends, and points the
// standard AWS environment (credentials, region, no shared config files,
// no instance metadata) at test credentials.
func Start(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			tb.Fatalf("s3server: create bucket %s: %v", b, err)
		}
	}
	srv := httptest.NewServer(gofakes3.New(be).Server())
	tb.Cleanup(srv.Close)
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           AccessKeyID,
		"AWS_SECRET_ACCESS_KEY":       SecretAccessKey,
		"AWS_REGION":                  region,
		"AWS_CONFIG_FILE":             "/nonexistent/aws-config",
		"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		tb.Setenv(k, v)
	}
	return &Server{Endpoint: srv.URL, Backend: be, srv: srv}
}

// URL is the s3:// URL of bucket/prefix on this server (path-style).
func (s *Server) URL(bucket, prefix string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("use_path_style", "true")
	q.Set("region", region)
	u := url.URL{Scheme: "s3", Host: bucket, Path: "/" + prefix, RawQuery: q.Encode()}
	if prefix == "" {
		u.Path = ""
	}
	return u.String()
}
