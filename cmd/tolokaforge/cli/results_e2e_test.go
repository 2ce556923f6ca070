package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/s3server"
)

// The whole path on real parts: a manager configured once with an s3://
// --artifacts-url runs an oracle Trial (pods simulated), its host writes
// the artifacts to the in-process S3 server, the Trial's status links
// them, and `results pull` fetches them by the Trial's name.
func TestManagerWritesArtifactsToS3AndResultsPullFetchesThem(t *testing.T) {
	if why := envtest.AssetsMissing(); why != "" {
		t.Skip(why)
	}
	h, err := envtest.Start(envtest.Options{SimWorkers: 2, ProbeInterval: 200 * time.Millisecond, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop() })
	srv := s3server.Start(t, "results")
	opts := h.ManagerOptions(2)
	opts.ArtifactsDir, opts.ArtifactsURL = "", srv.URL("results", "cluster")
	m, err := h.StartManager(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := "s3-e2e"
	if err := h.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Create(ctx, envtest.ShopTask("shop", ns).Obj()); err != nil {
		t.Fatal(err)
	}
	if err := h.Client.Create(ctx, envtest.MakeTrial("oracle", ns).Task("shop").Agent(envtest.Oracle()).Obj()); err != nil {
		t.Fatal(err)
	}
	var tr evalv1.Trial
	for {
		if err := h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "oracle"}, &tr); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(tr.Status.Conditions, evalv1.TrialCompleted) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trial not completed: %+v", tr.Status)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if tr.Status.Phase != evalv1.PhasePassed {
		t.Fatalf("phase %s: %+v", tr.Status.Phase, tr.Status)
	}
	if want := srv.URL("results", "cluster/"+ns+"/oracle/"); tr.Status.ArtifactsURL != want {
		t.Errorf("status.artifactsURL = %q, want %q", tr.Status.ArtifactsURL, want)
	}
	if want := "s3://results/cluster/" + ns + "/oracle/attempt-1/trials/shop_orders_02/0"; tr.Status.ArtifactsPath != want {
		t.Errorf("status.artifactsPath = %q, want %q", tr.Status.ArtifactsPath, want)
	}
	for _, s := range []string{tr.Status.ArtifactsURL, tr.Status.ArtifactsPath} {
		if strings.Contains(s, s3server.SecretAccessKey) || strings.Contains(s, s3server.AccessKeyID) {
			t.Errorf("status carries a credential: %s", s)
		}
	}
	if _, err := os.Stat(filepath.Join(h.Work, "artifacts")); !os.IsNotExist(err) {
		t.Errorf("artifacts also written locally: %v", err)
	}

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := runResults(ctx, []string{"pull", "oracle", "--out", out, "--namespace", ns}, &stdout, &stderr, h.Client); err != nil {
		t.Fatalf("pull: %v\n%s", err, stderr.String())
	}
	grade, err := os.ReadFile(filepath.Join(out, "oracle", "trials", "shop_orders_02", "0", "grade.yaml"))
	if err != nil || !strings.Contains(string(grade), "binary_pass: true") {
		t.Fatalf("pulled grade: %v\n%s\n%s", err, grade, stdout.String())
	}
}
