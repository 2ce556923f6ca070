package controllers_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	sigyaml "sigs.k8s.io/yaml"

	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task/pack"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/runner/tools/builtin"
)

// foodDeliveryGolden is food_delivery_2's golden task: 23 tools served by a
// Python MCP server whose ~40 files travel in the pack's files bundle.
var foodDeliveryGolden = filepath.Join("..", "api", "task", "pack", "testdata", "tolokaforge", "projects", "food_delivery_2", "tasks", "order_six_items_golden")

// importPack runs `pack import`'s conversion and applies its stream in ns,
// as `tolokaforge pack import DIR | kubectl apply --server-side -f -` would; edit may
// change the files ConfigMap before it is created.
func importPack(ns, dir string, edit func(*corev1.ConfigMap)) *evalv1.Task {
	// The tables stay inline: food_delivery_2's dict tables, each record with the
	// synthetic key column, pass the default limit, and these specs are about the
	// files bundle only.
	opts := pack.Options{Builtins: builtin.Catalog{}, Namespace: ns, InlineLimit: 1 << 20}
	c, err := pack.Convert(dir, opts)
	Expect(err).NotTo(HaveOccurred())
	m, err := pack.Build(c, opts)
	Expect(err).NotTo(HaveOccurred())
	var tk *evalv1.Task
	for _, doc := range importStream(m) {
		js := doc.JSON
		switch doc.Kind {
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			Expect(json.Unmarshal(js, cm)).To(Succeed())
			if edit != nil {
				edit(cm)
			}
			Expect(h.Client.Create(ctx, cm)).To(Succeed())
		case "Task":
			tk = &evalv1.Task{}
			Expect(json.Unmarshal(js, tk)).To(Succeed())
		}
	}
	Expect(tk).NotTo(BeNil())
	Expect(tk.Spec.Files).NotTo(BeNil(), "the import moves the pack's files into a bundle")
	Expect(string(tk.Spec.Description.Raw)).NotTo(ContainSubstring("tool_artifacts"))
	Expect(h.Client.Create(ctx, tk)).To(Succeed())
	return tk
}

// streamDoc is one object of pack import's output stream, as JSON.
type streamDoc struct {
	Kind string
	JSON []byte
}

// importStream writes m as `pack import` prints it and splits the stream into
// its objects, in order.
func importStream(m *pack.Manifests) []streamDoc {
	GinkgoHelper()
	var out bytes.Buffer
	Expect(pack.WriteStream(&out, []*pack.Manifests{m})).To(Succeed())
	var docs []streamDoc
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		js, err := sigyaml.YAMLToJSON([]byte(doc))
		Expect(err).NotTo(HaveOccurred())
		var head struct{ Kind string }
		Expect(json.Unmarshal(js, &head)).To(Succeed())
		docs = append(docs, streamDoc{Kind: head.Kind, JSON: js})
	}
	return docs
}

func scriptedOracleTrial(ns, name, taskName string) *evalv1.Trial {
	t := oracleTrial(ns, name, taskName)
	t.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted}
	return t
}

var _ = Describe("pack files delivered by digest", func() {
	It("runs a Python pack whose files come from a ConfigMap by digest, and it Passes with the oracle", func() {
		ns := newNamespace()
		tk := importPack(ns, foodDeliveryGolden, nil)
		key := types.NamespacedName{Namespace: ns, Name: "fd-golden"}
		Expect(h.Client.Create(ctx, scriptedOracleTrial(ns, key.Name, tk.Name))).To(Succeed())
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhasePassed), describeTrial(t))
		Expect(t.Status.Grade).NotTo(BeNil(), describeTrial(t))
		Expect(t.Status.Grade.Score).To(Equal(1.0), describeTrial(t))

		var got evalv1.Task
		Eventually(func() string {
			Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: tk.Name}, &got)).To(Succeed())
			if c := findCond(got.Status.Conditions, evalv1.TaskValid); c != nil {
				return string(c.Status)
			}
			return ""
		}, waitLong, pollEvery).Should(Equal("True"))
	})

	It("ends a Trial Invalid, before any pod, when the ConfigMap's bundle does not match the digest", func() {
		ns := newNamespace()
		var tampered string
		tk := importPack(ns, foodDeliveryGolden, func(cm *corev1.ConfigMap) {
			files, err := packfiles.Read(cm.BinaryData[packfiles.ConfigMapKey])
			Expect(err).NotTo(HaveOccurred())
			files["tools_helpers.py"] = append(files["tools_helpers.py"], []byte("\nimport os; os.system('id')\n")...)
			b, err := packfiles.Build(files)
			Expect(err).NotTo(HaveOccurred())
			cm.BinaryData[packfiles.ConfigMapKey] = b
			tampered = packfiles.Digest(b)
		})
		// Same size is not guaranteed; pad the Task's size to the tampered
		// bundle's so the digest, not the size, is what refuses it.
		var cm corev1.ConfigMap
		Expect(h.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: tk.Spec.Files.ConfigMap}, &cm)).To(Succeed())
		size := int64(len(cm.BinaryData[packfiles.ConfigMapKey]))
		if size != tk.Spec.Files.Size {
			patched := tk.DeepCopy()
			patched.Spec.Files.Size = size
			Expect(h.Client.Update(ctx, patched)).To(Succeed())
		}
		key := types.NamespacedName{Namespace: ns, Name: "fd-tampered"}
		Expect(h.Client.Create(ctx, scriptedOracleTrial(ns, key.Name, tk.Name))).To(Succeed())
		t := completed(key)
		msg := `task ` + tk.Name + `: spec.files: configMap ` + ns + `/` + tk.Spec.Files.ConfigMap + ` key "files.tar": digest ` +
			tampered + ` does not match the Task's ` + tk.Spec.Files.Digest
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
		Expect(t.Status.Attempts).To(BeEmpty(), "no attempt, no pod")
		failed := findCond(t.Status.Conditions, evalv1.TrialFailed)
		Expect(failed).NotTo(BeNil())
		Expect(failed.Reason).To(Equal(evalv1.ReasonPackFilesInvalid))
		Expect(failed.Message).To(Equal(msg))
		Expect(podsOf(key)).To(BeEmpty())
	})

	It("ends a Trial Invalid naming the ConfigMap when the bundle's ConfigMap is missing", func() {
		ns := newNamespace()
		tk := importPack(ns, foodDeliveryGolden, func(cm *corev1.ConfigMap) { cm.Name += "-elsewhere" })
		key := types.NamespacedName{Namespace: ns, Name: "fd-missing"}
		Expect(h.Client.Create(ctx, scriptedOracleTrial(ns, key.Name, tk.Name))).To(Succeed())
		t := completed(key)
		Expect(t.Status.Phase).To(Equal(evalv1.PhaseInvalid), describeTrial(t))
		rr := findCond(t.Status.Conditions, evalv1.TrialReferencesResolved)
		Expect(rr).NotTo(BeNil())
		Expect(rr.Reason).To(Equal(evalv1.ReasonConfigMapNotFound))
		Expect(rr.Message).To(Equal("ConfigMap " + ns + "/" + tk.Spec.Files.ConfigMap + " not found (spec.files.configMap)"))
		Expect(podsOf(key)).To(BeEmpty())
	})
})
