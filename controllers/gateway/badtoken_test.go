package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/gateway"
)

// countingReader counts the reads that reach the wrapped reader.
type countingReader struct {
	client.Reader
	gets atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// count makes the fixture's gateway read Trials and Secrets through counters.
func (f *fixture) count() (trials, secrets *countingReader) {
	trials, secrets = &countingReader{Reader: f.c}, &countingReader{Reader: f.c}
	f.gw.Trials, f.gw.Secrets = trials, secrets
	return trials, secrets
}

var hex64 = strings.Repeat("0123456789abcdef", 4)

// A malformed token is refused before any lookup: no Trial read (not even from
// the cache), no Secret read.
func TestMalformedTokensAreRefusedBeforeAnyLookup(t *testing.T) {
	f := newFixture(t)
	trials, secrets := f.count()
	for _, tok := range []string{
		"abc", "team-a/t1", "team-a/t1/" + hex64 + "/x", "/t1/" + hex64, "team-a//" + hex64,
		"team-a/t1/" + hex64[:63], "team-a/t1/" + hex64 + "0", "team-a/t1/" + strings.ToUpper(hex64),
		"team-a/t1/" + strings.Repeat("g", 64), "Team-A/t1/" + hex64, "team-a/T1/" + hex64, "team_a/t1/" + hex64,
		"team-a/t1 /" + hex64, strings.Repeat("a", 64) + "/t1/" + hex64, "team-a/" + strings.Repeat("a", 254) + "/" + hex64,
		strings.Repeat("x", 100_000), f.token + "?", "team-a/t1/" + hex64[:32] + " " + hex64[33:],
	} {
		if status, body := f.call(t, "Bearer "+tok, "judge-1"); status != 401 || !strings.Contains(body, "malformed token") {
			t.Errorf("token %.40q: %d %s, want 401 malformed token", tok, status, body)
		}
	}
	if n, m := trials.gets.Load(), secrets.gets.Load(); n != 0 || m != 0 {
		t.Fatalf("malformed tokens cost %d Trial and %d Secret reads, want none", n, m)
	}
}

// Well-formed tokens that are not a Trial's cost no Secret read (no API
// request) once the replica knows the Trial's token: for unknown Trials, for
// Trials without a judge, and for wrong tokens of a live Trial.
func TestBadTokensCostNoSecretReads(t *testing.T) {
	const n = 50
	f := newFixture(t)
	noJudge := &evalv1.Trial{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "no-judge", UID: "uid-2"}}
	if err := f.c.Create(context.Background(), noJudge); err != nil {
		t.Fatal(err)
	}
	_, secrets := f.count()
	wrong := func(trial string, i int) string {
		return "Bearer " + trial + "/" + strings.Repeat("0", 62) + string(rune('a'+i%6)) + string(rune('0'+i%10))
	}
	for i := range n {
		for _, trial := range []string{"team-a/nope", "other-ns/t1", "team-a/no-judge"} {
			if status, body := f.call(t, wrong(trial, i), "judge-1"); status != 401 || !strings.Contains(body, `"invalid token"`) {
				t.Fatalf("%s: %d %s", trial, status, body)
			}
		}
	}
	if m := secrets.gets.Load(); m != 0 {
		t.Fatalf("%d tokens of unknown or judgeless Trials cost %d Secret reads, want 0", 3*n, m)
	}
	// Cold: the first wrong token of a live Trial reads its Secret once, the
	// next n-1 none.
	for i := range n {
		if status, body := f.call(t, wrong("team-a/t1", i), "judge-1"); status != 401 || !strings.Contains(body, `"invalid token"`) {
			t.Fatalf("wrong token %d: %d %s", i, status, body)
		}
	}
	if m := secrets.gets.Load(); m != 1 {
		t.Fatalf("%d wrong tokens of a live Trial cost %d Secret reads, want 1", n, m)
	}
	// The good token still works, with no further read.
	if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusOK {
		t.Fatalf("good token: %d %s", status, body)
	}
	if m := secrets.gets.Load(); m != 1 {
		t.Fatalf("secret reads %d after the good call, want 1", m)
	}
}

// A completed Trial's token stops at once even when the replica knows it; a
// token Secret deleted while its Trial runs stops it within SecretRecheck.
func TestCachedTokenRevocation(t *testing.T) {
	t.Run("trial completed", func(t *testing.T) {
		f := newFixture(t)
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusOK {
			t.Fatalf("good token: %d %s", status, body)
		}
		f.trial.Status.Conditions = []metav1.Condition{{Type: evalv1.TrialCompleted, Status: metav1.ConditionTrue,
			Reason: "Passed", LastTransitionTime: metav1.Now()}}
		if err := f.c.Status().Update(context.Background(), f.trial); err != nil {
			t.Fatal(err)
		}
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "token revoked") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
	t.Run("token Secret deleted", func(t *testing.T) {
		f := newFixture(t)
		now := time.Now()
		f.gw.Now = func() time.Time { return now }
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusOK {
			t.Fatalf("good token: %d %s", status, body)
		}
		if err := f.c.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: gateway.SecretName("t1")}}); err != nil {
			t.Fatal(err)
		}
		now = now.Add(gateway.DefaultSecretRecheck + time.Second)
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "invalid token") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
	t.Run("trial replaced by one of the same name", func(t *testing.T) {
		f := newFixture(t)
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != http.StatusOK {
			t.Fatalf("good token: %d %s", status, body)
		}
		if err := f.c.Delete(context.Background(), f.trial); err != nil {
			t.Fatal(err)
		}
		again := f.trial.DeepCopy()
		again.ResourceVersion, again.UID = "", "uid-of-the-new-t1"
		if err := f.c.Create(context.Background(), again); err != nil {
			t.Fatal(err)
		}
		// The old Trial's Secret is not the new one's: the cached digest of
		// the old Trial's token does not carry over.
		if status, body := f.call(t, "Bearer "+f.token, "judge-1"); status != 401 || !strings.Contains(body, "invalid token") {
			t.Fatalf("status %d body %s", status, body)
		}
	})
}
