package podsim

import (
	"reflect"
	"testing"
)

func TestRewriteMounts(t *testing.T) {
	mounts := map[string]string{"/var/run/auth": "/tmp/v/auth", "/var/run/auth/nested": "/tmp/v/nested"}
	in := []string{"runner", "--auth-token-file=/var/run/auth/token", "/var/run/auth", "--x=/var/run/authority", "--y=/var/run/auth/nested/k", "plain=/var/run/auth/token"}
	want := []string{"runner", "--auth-token-file=/tmp/v/auth/token", "/tmp/v/auth", "--x=/var/run/authority", "--y=/tmp/v/nested/k", "plain=/var/run/auth/token"}
	if got := rewriteMounts(in, mounts); !reflect.DeepEqual(got, want) {
		t.Fatalf("rewriteMounts = %q\nwant %q", got, want)
	}
}
