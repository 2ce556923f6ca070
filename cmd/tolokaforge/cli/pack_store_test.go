package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/packfiles"
	"tolokaforge.io/operator/test/s3server"
)

// pack import --store puts each bundle in the store under its content
// address before writing the Tasks that name it by url; importing again
// uploads nothing, and an object with other bytes at the key is replaced.
func TestImportToStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := s3server.Start(t, "packs")
	fileURL, err := blobstore.FileURL(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	for name, storeURL := range map[string]string{"file": fileURL, "s3": srv.URL("packs", "team")} {
		t.Run(name, func(t *testing.T) {
			store, err := blobstore.Open(ctx, storeURL)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			// The inline limit raised: the dict tables, each record with the
			// synthetic key column, would pass the default and travel in an
			// initial-state ConfigMap, which is not what this test is about.
			args := []string{"import", fixture("projects/food_delivery_2"), "--store", storeURL, "--inline-limit", "1048576"}
			var out, errb bytes.Buffer
			if err := runPack(ctx, args, &out, &errb, ""); err != nil {
				t.Fatalf("%v\n%s", err, errb.String())
			}
			tasks, cms := readStream(t, out.Bytes())
			if len(tasks) != 2 || len(cms) != 0 {
				t.Fatalf("stream: %d tasks, %d configmaps; want 2 tasks and no files ConfigMap", len(tasks), len(cms))
			}
			keys := map[string]bool{}
			for _, tk := range tasks {
				f := tk.Spec.Files
				key := packfiles.StoreKey(f.Digest)
				if f.ConfigMap != "" || f.URL != store.ObjectURL(key) || !strings.HasPrefix(key, "packs/sha256/") {
					t.Fatalf("task %s: files %+v", tk.Name, f)
				}
				b, err := store.Get(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := packfiles.Open(b, packfiles.Ref{Digest: f.Digest, Size: f.Size}, key); err != nil {
					t.Fatalf("task %s: the stored bundle: %v", tk.Name, err)
				}
				keys[key] = true
			}
			if got := strings.Count(errb.String(), ": uploaded "); got != len(keys) {
				t.Errorf("%d uploads for %d distinct bundles:\n%s", got, len(keys), errb.String())
			}
			first := out.String()

			// Again: nothing uploaded, the same manifests.
			out.Reset()
			errb.Reset()
			if err := runPack(ctx, args, &out, &errb, ""); err != nil {
				t.Fatal(err)
			}
			if out.String() != first || strings.Contains(errb.String(), "uploaded") || strings.Count(errb.String(), ": already in the store") != len(keys) {
				t.Errorf("second import uploaded or changed the stream:\n%s", errb.String())
			}

			// A torn copy at the key is replaced.
			f := tasks[0].Spec.Files
			key := packfiles.StoreKey(f.Digest)
			if err := store.Put(ctx, key, []byte("torn")); err != nil {
				t.Fatal(err)
			}
			errb.Reset()
			out.Reset()
			if err := runPack(ctx, args, &out, &errb, ""); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(errb.String(), store.ObjectURL(key)+": the object there is not "+f.Digest+"; replacing it") {
				t.Errorf("stderr:\n%s", errb.String())
			}
			if b, err := store.Get(ctx, key); err != nil || packfiles.Digest(b) != f.Digest {
				t.Errorf("after the re-import the object's digest is %s (%v), want %s", packfiles.Digest(b), err, f.Digest)
			}
		})
	}
}

func TestImportToStoreErrors(t *testing.T) {
	for _, tc := range []struct {
		store, want string
	}{
		{"ftp://host/x", `pack import: --store "ftp://host/x": want s3://BUCKET/PREFIX or file:///DIR`},
		{"file://relative/x", `pack import: --store: artifacts URL "file://relative/x": want an absolute path (file:///dir), got host "relative"`},
		// Nothing listens there: the upload fails and no manifest is written.
		{"s3://b/p?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true", "; no manifests written"},
	} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := runPack(ctx, []string{"import", fixture("projects/food_delivery_2"), "--store", tc.store}, &out, &errb, "")
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
			t.Errorf("--store %s: error %v, %d bytes written; want %q", tc.store, err, out.Len(), tc.want)
		}
	}
}
