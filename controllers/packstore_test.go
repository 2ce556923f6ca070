package controllers

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/s3server"
)

// TestFetchPackFilesFromStore: spec.files.url is read from the manager's
// own store only, verified like a ConfigMap's bundle, and every failure is
// a taskError naming the URL (and the store, or both digests).
func TestFetchPackFilesFromStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bundle, err := packfiles.Build(map[string][]byte{"tau_tools/a.py": []byte("A = 1\n")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := packfiles.Build(map[string][]byte{"tau_tools/a.py": []byte("A = 666\n")})
	if err != nil {
		t.Fatal(err)
	}
	digest, size := packfiles.Digest(bundle), int64(len(bundle))
	srv := s3server.Start(t, "packs", "elsewhere")
	fileURL, err := blobstore.FileURL(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	for name, storeURL := range map[string]string{"file": fileURL, "s3": srv.URL("packs", "team")} {
		t.Run(name, func(t *testing.T) {
			s, err := blobstore.Open(ctx, storeURL)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for key, b := range map[string][]byte{"packs/good.tar": bundle, "packs/tampered.tar": other} {
				if err := s.Put(ctx, key, b); err != nil {
					t.Fatal(err)
				}
			}
			base := s.Base()
			for _, tc := range []struct {
				name            string
				packs           *blobstore.Store
				files           evalv1.PackFiles
				reason          string
				transient, ends bool
				msg             string
			}{
				{name: "verified", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size, URL: base + "/packs/good.tar"}},
				{name: "digest mismatch", packs: s, files: evalv1.PackFiles{Digest: digest, Size: int64(len(other)), URL: base + "/packs/tampered.tar"},
					reason: evalv1.ReasonPackFilesInvalid,
					msg:    "spec.files: url " + base + "/packs/tampered.tar: digest " + packfiles.Digest(other) + " does not match the Task's " + digest},
				{name: "object larger than the Task says", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size - 1, URL: base + "/packs/good.tar"},
					reason: evalv1.ReasonPackFilesInvalid, msg: "larger than the Task's size"},
				{name: "missing object", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size, URL: base + "/packs/absent.tar"},
					reason: evalv1.ReasonPackFilesUnavailable, transient: true, ends: true,
					msg: "spec.files: url " + base + "/packs/absent.tar: no such object in the store " + base + " (upload it with tolokaforge pack import --store " + base + ")"},
				{name: "another bucket", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size, URL: "s3://elsewhere/team/packs/good.tar"},
					reason: evalv1.ReasonPackFilesInvalid,
					msg:    "spec.files: url s3://elsewhere/team/packs/good.tar is outside the store " + base + "; the manager reads pack files from its own store only"},
				{name: "outside the prefix", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size, URL: base + "x/packs/good.tar"},
					reason: evalv1.ReasonPackFilesInvalid, msg: "is outside the store " + base},
				{name: "escapes the prefix", packs: s, files: evalv1.PackFiles{Digest: digest, Size: size, URL: base + "/../x/packs/good.tar"},
					reason: evalv1.ReasonPackFilesInvalid, msg: "empty, . or .. segment"},
				{name: "malformed digest, refused before fetching", packs: s, files: evalv1.PackFiles{Digest: "sha256:AB", Size: size, URL: base + "/packs/absent.tar"},
					reason: evalv1.ReasonPackFilesInvalid, msg: `digest "sha256:AB": want sha256: followed by 64 lowercase hex digits`},
				{name: "no store on the manager", files: evalv1.PackFiles{Digest: digest, Size: size, URL: base + "/packs/good.tar"},
					reason: evalv1.ReasonPackFilesUnavailable, ends: true,
					msg: "spec.files: url " + base + "/packs/good.tar: the manager has no artifact store (--artifacts-url) to read it from"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f := tc.files
					spec := &evalv1.TaskSpec{Description: apiextensionsv1.JSON{Raw: shop.TaskJSON()}, Files: &f}
					rt, err := resolveTaskSpec(ctx, nil, tc.packs, "ns", spec)
					if tc.reason == "" {
						if err != nil {
							t.Fatal(err)
						}
						if got := rt.Desc.ToolArtifacts["tau_tools/a.py"]; got != base64.StdEncoding.EncodeToString([]byte("A = 1\n")) {
							t.Errorf("tool_artifacts = %v", rt.Desc.ToolArtifacts)
						}
						return
					}
					te, ok := err.(*taskError)
					if !ok {
						t.Fatalf("err = %#v, want a *taskError", err)
					}
					if te.Reason != tc.reason || te.Transient != tc.transient || te.EndsTrial != tc.ends || !strings.Contains(te.Error(), tc.msg) {
						t.Errorf("got reason %s transient %v ends %v %q\nwant reason %s transient %v ends %v %q",
							te.Reason, te.Transient, te.EndsTrial, te.Error(), tc.reason, tc.transient, tc.ends, tc.msg)
					}
				})
			}
		})
	}
}

// TestPlanMissingPackObjectEndsTheTrial: a pack object not in the store
// keeps the Task retrying but ends a Trial Invalid at once (no pod, no
// waiting Pending for an upload that may never come).
func TestPlanMissingPackObjectEndsTheTrial(t *testing.T) {
	msg := "task fd: spec.files: url s3://b/packs/sha256/aa.tar: no such object in the store s3://b"
	w := world{Now: t0, Trial: testTrial(), TaskErr: &taskError{Reason: evalv1.ReasonPackFilesUnavailable, Transient: true, EndsTrial: true, Err: errString(msg)}}
	p := planTrial(&w)
	if p.Claim != nil || len(p.CreatePod) != 0 || len(p.Status.Attempts) != 0 {
		t.Fatalf("an attempt started: claim %v pods %v attempts %d", p.Claim, p.CreatePod, len(p.Status.Attempts))
	}
	if p.Status.Phase != evalv1.PhaseInvalid {
		t.Fatalf("phase %s, want Invalid", p.Status.Phase)
	}
	if f := cond(&p.Status, evalv1.TrialFailed); f.Status != metav1.ConditionTrue || f.Reason != evalv1.ReasonPackFilesUnavailable || f.Message != msg {
		t.Errorf("Failed = %+v", f)
	}
}
