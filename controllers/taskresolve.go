package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/api/task"
	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/refs"
)

// maxInitialStateBytes bounds a decompressed initialStateFrom value, so a
// small gzip bomb in a ConfigMap cannot take the manager's memory.
const maxInitialStateBytes = 64 << 20

// resolvedTask is a task ready to be sent: the merged description, strictly
// decoded, and the host-side fields of the Task.
type resolvedTask struct {
	Desc               *task.TaskDescription
	InitialUserMessage string
	MaxTurns           *int32
}

// taskError says why a task cannot be resolved; Reason is a condition reason.
type taskError struct {
	Reason string
	Err    error
	// Transient errors (a ConfigMap not there yet, an API hiccup) may heal
	// by themselves; the rest need a new spec.
	Transient bool
	// Missing names the object that does not exist, when that is the
	// error. A Task retries (its Valid condition follows the ConfigMap); a
	// Trial fails fast on it.
	Missing *refs.MissingRef
	// EndsTrial: a Trial ends Invalid on it at once although the Task
	// retries (a pack object not in the store: the Task may become valid
	// once someone pushes it, a Trial waiting for that would hang).
	EndsTrial bool
}

func (e *taskError) Error() string { return e.Err.Error() }
func (e *taskError) Unwrap() error { return e.Err }

// resolveTaskSpec merges a Task's initialStateFrom and files into its description and
// decodes the result strictly. Errors are *TaskError.
// packs is the store spec.files.url objects are read from (the manager's
// artifact store); nil when the manager has none.
func resolveTaskSpec(ctx context.Context, r client.Reader, packs *blobstore.Store, namespace string, spec *evalv1.TaskSpec) (*resolvedTask, error) {
	raw := spec.Description.Raw
	if src := spec.InitialStateFrom; src != nil {
		tables, err := loadInitialState(ctx, r, namespace, src.ConfigMapKeyRef)
		if err != nil {
			var te *taskError
			if errors.As(err, &te) {
				return nil, err
			}
			return nil, &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Err: err, Transient: true}
		}
		merged, err := mergeInitialState(raw, tables)
		if err != nil {
			return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: err}
		}
		raw = merged
	}
	if f := spec.Files; f != nil {
		var files map[string][]byte
		var err error
		if f.URL != "" {
			files, err = fetchPackFiles(ctx, packs, f)
		} else {
			files, err = loadPackFiles(ctx, r, namespace, f)
		}
		if err != nil {
			return nil, err
		}
		merged, err := mergeToolArtifacts(raw, files)
		if err != nil {
			return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: err}
		}
		raw = merged
	}
	desc, err := decodeDescription(raw, "spec.description")
	if err != nil {
		return nil, err
	}
	return &resolvedTask{Desc: desc, InitialUserMessage: spec.InitialUserMessage, MaxTurns: spec.MaxTurns}, nil
}

// decodeDescription is the strict decoder with the error rooted at field.
func decodeDescription(raw []byte, field string) (*task.TaskDescription, error) {
	if len(raw) == 0 {
		return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: fmt.Errorf("%s is empty", field)}
	}
	desc, err := task.DecodeTaskDescription(raw)
	if err != nil {
		var de *task.DecodeError
		if errors.As(err, &de) && de.Path != "" {
			return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: fmt.Errorf("%s.%s: %s", field, de.Path, de.Msg)}
		}
		return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: fmt.Errorf("%s: %w", field, err)}
	}
	if err := desc.CheckRunnable(); err != nil {
		return nil, &taskError{Reason: evalv1.ReasonInvalidDescription, Err: fmt.Errorf("%s: %w", field, err)}
	}
	return desc, nil
}

// loadInitialState reads the tables JSON from a ConfigMap key, gunzipping
// binaryData when the reference says so.
func loadInitialState(ctx context.Context, r client.Reader, namespace string, ref evalv1.ConfigMapKeyRef) ([]byte, error) {
	where := fmt.Sprintf("initialStateFrom configMap %s/%s key %q", namespace, ref.Name, ref.Key)
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Err: fmt.Errorf("%s: configMap not found", where), Transient: true,
				Missing: &refs.MissingRef{Reason: evalv1.ReasonConfigMapNotFound, Kind: "ConfigMap", Namespace: namespace, Name: ref.Name,
					Field: "spec.initialStateFrom.configMapKeyRef"}}
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	data, err := configMapValue(cm, ref)
	if err != nil {
		return nil, &taskError{Reason: evalv1.ReasonInitialStateUnavailable, Err: fmt.Errorf("%s: %w", where, err), Transient: true}
	}
	return data, nil
}

// loadPackFiles reads spec.files' bundle from its ConfigMap in the Task's
// namespace and verifies it (size, digest, entries) before any file is
// used. Only the manager reads it: the runner pod gets the verified files in
// RegisterTrial's tool_artifacts, so it needs no ConfigMap mount, no store
// credentials, and cannot be handed files nobody checked.
func loadPackFiles(ctx context.Context, r client.Reader, namespace string, f *evalv1.PackFiles) (map[string][]byte, error) {
	where := fmt.Sprintf("spec.files: configMap %s/%s key %q", namespace, f.ConfigMap, packfiles.ConfigMapKey)
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: f.ConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &taskError{Reason: evalv1.ReasonPackFilesUnavailable, Err: fmt.Errorf("%s: configMap not found", where), Transient: true,
				Missing: &refs.MissingRef{Reason: evalv1.ReasonConfigMapNotFound, Kind: "ConfigMap", Namespace: namespace, Name: f.ConfigMap,
					Field: "spec.files.configMap"}}
		}
		return nil, &taskError{Reason: evalv1.ReasonPackFilesUnavailable, Err: fmt.Errorf("%s: %w", where, err), Transient: true}
	}
	bundle, ok := cm.BinaryData[packfiles.ConfigMapKey]
	if !ok {
		msg := "key not found in binaryData"
		if _, inData := cm.Data[packfiles.ConfigMapKey]; inData {
			msg = "the bundle is in data; want it in binaryData"
		}
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: fmt.Errorf("%s: %s", where, msg)}
	}
	files, err := packfiles.Open(bundle, packfiles.Ref{Digest: f.Digest, Size: f.Size}, where)
	if err != nil {
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: err}
	}
	return files, nil
}

// fetchPackFiles reads spec.files' bundle from the manager's store with the
// manager's credentials and verifies it as loadPackFiles does. Only a URL
// inside that store is read: a Task cannot make the manager fetch from
// another bucket or directory on its behalf. Size and digest form are
// checked before any request, and no more than the Task's size is read.
func fetchPackFiles(ctx context.Context, packs *blobstore.Store, f *evalv1.PackFiles) (map[string][]byte, error) {
	where := "spec.files: url " + f.URL
	ref := packfiles.Ref{Digest: f.Digest, Size: f.Size}
	if packs == nil {
		return nil, &taskError{Reason: evalv1.ReasonPackFilesUnavailable, EndsTrial: true,
			Err: fmt.Errorf("%s: the manager has no artifact store (--artifacts-url) to read it from", where)}
	}
	key, err := packs.KeyOf(f.URL)
	if err != nil {
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid,
			Err: fmt.Errorf("spec.files: %w; the manager reads pack files from its own store only", err)}
	}
	if err := packfiles.CheckRef(ref); err != nil {
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: fmt.Errorf("%s: %w", where, err)}
	}
	// Never more than the Task's size: a larger object is refused unread
	// (and a size of 0, which no bundle has, must not mean "no limit").
	bundle, err := packs.GetLimit(ctx, key, max(f.Size, 1))
	switch {
	case blobstore.IsNotFound(err):
		return nil, &taskError{Reason: evalv1.ReasonPackFilesUnavailable, Transient: true, EndsTrial: true,
			Err: fmt.Errorf("%s: no such object in the store %s (upload it with tolokaforge pack import --store %s)", where, packs.Base(), packs.Base())}
	case errors.Is(err, blobstore.ErrTooLarge):
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: fmt.Errorf("%s: larger than the Task's size %d: %w", where, f.Size, err)}
	case err != nil:
		return nil, &taskError{Reason: evalv1.ReasonPackFilesUnavailable, Transient: true, Err: fmt.Errorf("%s: %w", where, err)}
	}
	files, err := packfiles.Open(bundle, ref, where)
	if err != nil {
		return nil, &taskError{Reason: evalv1.ReasonPackFilesInvalid, Err: err}
	}
	return files, nil
}

// mergeToolArtifacts sets a description's tool_artifacts to files (base64,
// the wire form). Files given inline and by spec.files are refused, as
// tables given both ways are: a grade must say which files it ran.
func mergeToolArtifacts(description []byte, files map[string][]byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(description, &top); err != nil || top == nil {
		return nil, fmt.Errorf("spec.description: want a JSON object: %v", errOr(err, "got null"))
	}
	if raw, ok := top["tool_artifacts"]; ok && !isJSONNull(raw) && string(bytes.TrimSpace(raw)) != "{}" {
		return nil, errors.New("spec.description.tool_artifacts is set inline and by spec.files; use one")
	}
	arts := make(map[string]string, len(files))
	for p, b := range files {
		arts[p] = base64.StdEncoding.EncodeToString(b)
	}
	enc, err := task.Encode(arts)
	if err != nil {
		return nil, fmt.Errorf("encode tool_artifacts: %w", err)
	}
	top["tool_artifacts"] = enc
	return task.Encode(top)
}

// configMapValue extracts a key's bytes: binaryData gunzipped when ref.Gzip,
// otherwise data or binaryData as stored.
func configMapValue(cm *corev1.ConfigMap, ref evalv1.ConfigMapKeyRef) ([]byte, error) {
	if ref.Gzip {
		b, ok := cm.BinaryData[ref.Key]
		if !ok {
			if _, inData := cm.Data[ref.Key]; inData {
				return nil, errors.New("gzip: true needs the value in binaryData, found it in data")
			}
			return nil, errors.New("key not found in binaryData")
		}
		return gunzip(b, maxInitialStateBytes)
	}
	if s, ok := cm.Data[ref.Key]; ok {
		return []byte(s), nil
	}
	if b, ok := cm.BinaryData[ref.Key]; ok {
		if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
			return nil, errors.New("value is gzip-compressed; set gzip: true")
		}
		return b, nil
	}
	return nil, errors.New("key not found in data or binaryData")
}

// gunzip decompresses b, refusing more than limit bytes of output.
func gunzip(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("gunzip: decompressed value exceeds %d bytes", limit)
	}
	return out, nil
}

// mergeInitialState sets initial_state.tables of a description (a JSON
// object) to tables (a JSON object of table name to records). The tables
// stay raw, so number literals (300.0 vs 300) reach the runner as written.
// Tables given both inline and by reference are an error rather than a
// silent override: nobody can tell which one a grade was computed against.
func mergeInitialState(description, tables []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(description, &top); err != nil || top == nil {
		return nil, fmt.Errorf("spec.description: want a JSON object: %v", errOr(err, "got null"))
	}
	trimmed := bytes.TrimSpace(tables)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, fmt.Errorf("initialStateFrom: want a JSON object of tables (name to records), got %s", describeJSON(trimmed))
	}
	state := map[string]json.RawMessage{}
	if raw, ok := top["initial_state"]; ok && !isJSONNull(raw) {
		if err := json.Unmarshal(raw, &state); err != nil || state == nil {
			return nil, fmt.Errorf("spec.description.initial_state: want a JSON object: %v", errOr(err, "got null"))
		}
		if t, ok := state["tables"]; ok && !isJSONNull(t) {
			return nil, errors.New("spec.description.initial_state.tables is set inline and by initialStateFrom; use one")
		}
	}
	state["tables"] = json.RawMessage(trimmed)
	enc, err := task.Encode(state)
	if err != nil {
		return nil, fmt.Errorf("encode initial_state: %w", err)
	}
	top["initial_state"] = enc
	return task.Encode(top)
}

func isJSONNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

func errOr(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

// describeJSON names what a non-object value is, for error messages.
func describeJSON(b []byte) string {
	if len(b) == 0 {
		return "nothing"
	}
	if !json.Valid(b) {
		return "invalid JSON"
	}
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// taskSummary is what kubectl get tasks shows.
type taskSummary struct {
	TaskID, Category                     string
	AgentTools, UserTools, GoldenActions int32
}

func summarize(d *task.TaskDescription) taskSummary {
	s := taskSummary{
		TaskID: d.TaskID, Category: d.Category,
		AgentTools: int32(len(d.AgentTools)), UserTools: int32(len(d.UserTools)),
	}
	if d.Grading != nil && d.Grading.StateChecks != nil {
		s.GoldenActions = int32(len(d.Grading.StateChecks.GoldenActions))
	}
	return s
}
