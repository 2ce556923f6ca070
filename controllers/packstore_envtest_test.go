package controllers_test

import (
	"encoding/json"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task/pack"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// importPackToStore is `tolokaforge pack import --store URL DIR | kubectl
// apply -f -` against the manager's own artifact store: the bundle is put
// in the store (unless upload is false) and the Task names it by url.
func importPackToStore(ns, dir string, upload bool) *evalv1.Task {
	store, err := blobstore.Open(ctx, "file://"+filepath.ToSlash(filepath.Join(h.Work, "artifacts")))
	Expect(err).NotTo(HaveOccurred())
	defer store.Close()
	// InlineLimit: the tables stay in the Task (food_delivery_2's dict tables, each
	// record with the synthetic key column, pass the default limit).
	opts := pack.Options{Builtins: builtin.Catalog{}, Namespace: ns, FilesURL: store.ObjectURL, InlineLimit: 1 << 20}
	c, err := pack.Convert(dir, opts)
	Expect(err).NotTo(HaveOccurred())
	m, err := pack.Build(c, opts)
	Expect(err).NotTo(HaveOccurred())
	Expect(m.FilesConfigMap).To(BeNil())
	if upload {
		Expect(store.Put(ctx, m.BundleKey, m.Bundle)).To(Succeed())
	} else {
		Expect(store.Delete(ctx, m.BundleKey)).To(Succeed())
	}
	var tk *evalv1.Task
	for _, doc := range importStream(m) {
		Expect(doc.Kind).To(Equal("Task"), "the stream holds the Task only")
		tk = &evalv1.Task{}
		Expect(json.Unmarshal(doc.JSON, tk)).To(Succeed())
	}
	Expect(tk.Spec.Files.URL).To(Equal(store.ObjectURL(packfiles.StoreKey(tk.Spec.Files.Digest))))
	Expect(h.Client.Create(ctx, tk)).To(Succeed())
	return tk
}

var _ = Describe("pack files delivered from the artifact store", func() {
	It("runs a Python pack whose bundle the manager reads from its store, and it Passes with the oracle", func() {
		ns := newNamespace()
		tk := importPackToStore(ns, foodDeliveryGolden, true)
		key := types.NamespacedName{Namespace: ns, Name: "fd-store"}
		Expect(h.Client.Create(ctx, scriptedOracleTrial(ns, key.Name, tk.Name))).To(Succeed())
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(t))
		Expect(t.Status.Grade).NotTo(BeNil(), describeTrial(t))
		Expect(t.Status.Grade.Score).To(Equal(1.0), describeTrial(t))
	})

	It("ends a Trial Invalid, before any pod, when the bundle is not in the store", func() {
		ns := newNamespace()
		tk := importPackToStore(ns, foodDeliveryGolden, false)
		key := types.NamespacedName{Namespace: ns, Name: "fd-store-missing"}
		Expect(h.Client.Create(ctx, scriptedOracleTrial(ns, key.Name, tk.Name))).To(Succeed())
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
		Expect(t.Status.Attempts).To(BeEmpty(), "no attempt, no pod")
		failed := findCond(t.Status.Conditions, evalv1.TrialFailed)
		Expect(failed).NotTo(BeNil())
		Expect(failed.Reason).To(Equal(evalv1.ReasonPackFilesUnavailable))
		base := "file://" + filepath.ToSlash(filepath.Join(h.Work, "artifacts"))
		Expect(failed.Message).To(Equal("task " + tk.Name + ": spec.files: url " + tk.Spec.Files.URL + ": no such object in the store " + base +
			" (upload it with tolokaforge pack import --store " + base + ")"))
		Expect(podsOf(key)).To(BeEmpty())
	})

	It("refuses at apply a Task naming both a ConfigMap and a url, or a url with a query", func() {
		ns := newNamespace()
		d := packfiles.Digest([]byte("x"))
		for _, tc := range []struct {
			files evalv1.PackFiles
			want  string
		}{
			{evalv1.PackFiles{Digest: d, Size: 1, ConfigMap: "cm", URL: "s3://b/packs/x.tar"}, "give exactly one of configMap and url"},
			{evalv1.PackFiles{Digest: d, Size: 1}, "give exactly one of configMap and url"},
			{evalv1.PackFiles{Digest: d, Size: 1, URL: "s3://b/x.tar?endpoint=http://evil"}, "url must be s3://BUCKET/KEY or file:///PATH, without a query or fragment"},
			{evalv1.PackFiles{Digest: d, Size: 1, URL: "https://b/x.tar"}, "url must be s3://BUCKET/KEY or file:///PATH"},
		} {
			f := tc.files
			tk := &evalv1.Task{}
			tk.Namespace, tk.GenerateName = ns, "both-"
			tk.Spec.Description.Raw = []byte(`{"task_id":"x"}`)
			tk.Spec.Files = &f
			err := h.Client.Create(ctx, tk)
			Expect(err).To(HaveOccurred(), "%+v", f)
			Expect(err.Error()).To(ContainSubstring(tc.want))
		}
	})
})
