package controllers

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"tolokaforge.io/operator/api/packfiles"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/examples/shop"
)

// TestResolvePackFiles: a Task's spec.files reach the description's
// tool_artifacts only when the ConfigMap's bundle is the one the Task names;
// every other case is a taskError naming what and where.
func TestResolvePackFiles(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	bundle, err := packfiles.Build(map[string][]byte{"tau_tools/a.py": []byte("A = 1\n"), "helpers.py": []byte("H = 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := packfiles.Build(map[string][]byte{"tau_tools/a.py": []byte("A = 666\n")})
	if err != nil {
		t.Fatal(err)
	}
	digest := packfiles.Digest(bundle)
	cm := func(name string, key string, b []byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, BinaryData: map[string][]byte{key: b}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		cm("files", packfiles.ConfigMapKey, bundle),
		cm("tampered", packfiles.ConfigMapKey, other),
		cm("wrong-key", "bundle.tar", bundle),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "in-data"}, Data: map[string]string{packfiles.ConfigMapKey: string(bundle)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "files"}, BinaryData: map[string][]byte{packfiles.ConfigMapKey: bundle}},
	).Build()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		desc      string
		files     evalv1.PackFiles
		reason    string
		transient bool
		missing   bool
		msg       string
	}{
		{name: "verified", files: evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)), ConfigMap: "files"}},
		{name: "digest mismatch", files: evalv1.PackFiles{Digest: packfiles.Digest(bundle), Size: int64(len(other)), ConfigMap: "tampered"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/tampered key "files.tar": digest ` + packfiles.Digest(other) + ` does not match the Task's ` + digest},
		{name: "size mismatch", files: evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)) + 7, ConfigMap: "files"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/files key "files.tar": ` + strconv.Itoa(len(bundle)) + ` bytes, the Task says ` + strconv.Itoa(len(bundle)+7)},
		{name: "missing configmap (never another namespace's)", files: evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)), ConfigMap: "absent"},
			reason: evalv1.ReasonPackFilesUnavailable, transient: true, missing: true,
			msg: `spec.files: configMap ns/absent key "files.tar": configMap not found`},
		{name: "missing key", files: evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)), ConfigMap: "wrong-key"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/wrong-key key "files.tar": key not found in binaryData`},
		{name: "bundle in data", files: evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)), ConfigMap: "in-data"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/in-data key "files.tar": the bundle is in data; want it in binaryData`},
		{name: "over the limit", files: evalv1.PackFiles{Digest: digest, Size: packfiles.MaxBundleBytes + 1, ConfigMap: "files"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/files key "files.tar": size 33554433 exceeds the limit of 33554432 bytes`},
		{name: "malformed digest (past the CRD)", files: evalv1.PackFiles{Digest: "sha256:ABC", Size: int64(len(bundle)), ConfigMap: "files"},
			reason: evalv1.ReasonPackFilesInvalid,
			msg:    `spec.files: configMap ns/files key "files.tar": digest "sha256:ABC": want sha256: followed by 64 lowercase hex digits`},
		{name: "files inline too", desc: `"tool_artifacts":{"x.py":"eA=="},`,
			files:  evalv1.PackFiles{Digest: digest, Size: int64(len(bundle)), ConfigMap: "files"},
			reason: evalv1.ReasonInvalidDescription,
			msg:    "spec.description.tool_artifacts is set inline and by spec.files; use one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := shop.TaskJSON()
			if tc.desc != "" {
				raw = []byte(strings.Replace(string(raw), "{", "{"+tc.desc, 1))
			}
			f := tc.files
			spec := &evalv1.TaskSpec{Description: apiextensionsv1.JSON{Raw: raw}, Files: &f}
			rt, err := resolveTaskSpec(ctx, c, nil, "ns", spec)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				arts := rt.Desc.ToolArtifacts
				if len(arts) != 2 || arts["tau_tools/a.py"] != base64.StdEncoding.EncodeToString([]byte("A = 1\n")) ||
					arts["helpers.py"] != base64.StdEncoding.EncodeToString([]byte("H = 2\n")) {
					t.Errorf("tool_artifacts = %v", arts)
				}
				return
			}
			te, ok := err.(*taskError)
			if !ok {
				t.Fatalf("err = %#v, want a *taskError", err)
			}
			if te.Reason != tc.reason || te.Transient != tc.transient || (te.Missing != nil) != tc.missing || te.Error() != tc.msg {
				t.Errorf("got reason %s transient %v missing %+v %q\nwant reason %s transient %v missing %v %q",
					te.Reason, te.Transient, te.Missing, te.Error(), tc.reason, tc.transient, tc.missing, tc.msg)
			}
			if tc.missing && (te.Missing.Field != "spec.files.configMap" || te.Missing.Reason != evalv1.ReasonConfigMapNotFound || te.Missing.Namespace != "ns") {
				t.Errorf("missing = %+v", te.Missing)
			}
		})
	}
}

// TestPlanInvalidTaskNamesTheCause: a Task that cannot be resolved for good
// ends the Trial Invalid before any pod, and Failed carries the cause's
// reason (PackFilesInvalid), not only the phase.
func TestPlanInvalidTaskNamesTheCause(t *testing.T) {
	msg := `task fd: spec.files: configMap ns/fd-files key "files.tar": digest sha256:aa does not match the Task's sha256:bb`
	w := world{Now: t0, Trial: testTrial(), TaskErr: &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: errString(msg)}}
	p := planTrial(&w)
	if p.Claim != nil || len(p.CreatePod) != 0 || len(p.Status.Attempts) != 0 {
		t.Fatalf("an attempt started: claim %v pods %v attempts %d", p.Claim, p.CreatePod, len(p.Status.Attempts))
	}
	if p.Status.Phase != evalv1.PhaseInvalid {
		t.Fatalf("phase %s, want Invalid", p.Status.Phase)
	}
	if c := cond(&p.Status, evalv1.TrialCompleted); c.Reason != string(evalv1.PhaseInvalid) || c.Message != msg {
		t.Errorf("Completed = %+v", c)
	}
	if f := cond(&p.Status, evalv1.TrialFailed); f.Status != metav1.ConditionTrue || f.Reason != evalv1.ReasonPackFilesInvalid || f.Message != msg {
		t.Errorf("Failed = %+v", f)
	}
}
