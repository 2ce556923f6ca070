package blobstore_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/artifacts/blobstore"
	"tolokaforge.io/operator/api/runnerpb"
	"tolokaforge.io/operator/test/s3server"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func attempt(n int, grade bool) *artifacts.Attempt {
	a := &artifacts.Attempt{TrialID: "t:0", TaskID: "shop_orders_02", TrialIndex: 0, AttemptNumber: n,
		Outcome: "Failed", TerminationReason: "agent_done", Turns: n,
		StartTime: time.Unix(0, 0), EndTime: time.Unix(5, 0)}
	if grade {
		a.Outcome = "Passed"
		a.Grade = &runnerpb.Grade{BinaryPass: true, Score: 1, Reasons: "ok"}
		a.GradedBy = "runner"
	}
	return a
}

// stores opens the same test against a file:// directory and a real
// S3-compatible server.
func stores(t *testing.T) map[string]*blobstore.Store {
	srv := s3server.Start(t, "results")
	fileURL, err := blobstore.FileURL(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*blobstore.Store{}
	for name, u := range map[string]string{"file": fileURL, "s3": srv.URL("results", "campaigns/c1")} {
		s, err := blobstore.Open(ctxT(t), u)
		if err != nil {
			t.Fatalf("%s: open %s: %v", name, u, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out[name] = s
	}
	return out
}

// The attempt layout written through the store, read back and downloaded:
// the same files whichever store, each attempt under its own key so two
// managers driving attempts 1 and 2 never write one object.
func TestWriteAttemptsAndDownload(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			for n, graded := range map[int]bool{1: true, 2: false} {
				loc, err := artifacts.WriteTo(ctx, s.Sink("ns/trial-a/attempt-"+itoa(n)), attempt(n, graded))
				if err != nil {
					t.Fatal(err)
				}
				if want := "ns/trial-a/attempt-" + itoa(n) + "/trials/shop_orders_02/0"; !strings.HasSuffix(filepath.ToSlash(loc), want) {
					t.Errorf("location %q, want suffix %q", loc, want)
				}
			}
			keys, err := s.List(ctx, "ns/trial-a/")
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/attempts/1/grade.yaml",
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/attempts/1/metrics.yaml",
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/attempts/1/trajectory.yaml",
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/grade.yaml",
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/metrics.yaml",
				"ns/trial-a/attempt-1/trials/shop_orders_02/0/trajectory.yaml",
				"ns/trial-a/attempt-2/trials/shop_orders_02/0/attempts/2/metrics.yaml",
				"ns/trial-a/attempt-2/trials/shop_orders_02/0/attempts/2/trajectory.yaml",
				"ns/trial-a/attempt-2/trials/shop_orders_02/0/metrics.yaml",
				"ns/trial-a/attempt-2/trials/shop_orders_02/0/trajectory.yaml",
			}
			sort.Strings(keys)
			if strings.Join(keys, "\n") != strings.Join(want, "\n") {
				t.Fatalf("keys:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
			}
			b, err := s.Get(ctx, "ns/trial-a/attempt-1/trials/shop_orders_02/0/grade.yaml")
			if err != nil || !strings.Contains(string(b), "binary_pass: true") {
				t.Fatalf("grade.yaml = %q, %v", b, err)
			}
			dir := t.TempDir()
			n, err := s.Download(ctx, "ns/trial-a/", dir, nil)
			if err != nil || n != len(want) {
				t.Fatalf("download = %d, %v; want %d", n, err, len(want))
			}
			got, err := os.ReadFile(filepath.Join(dir, "attempt-2", "trials", "shop_orders_02", "0", "trajectory.yaml"))
			if err != nil || !strings.Contains(string(got), "attempt: 2") {
				t.Fatalf("downloaded trajectory = %q, %v", got, err)
			}
			// status.artifactsURL of the trial, pulled as one local trial:
			// attempt 2 on top (it has no grade, so none is there), both
			// attempts' own copies under attempts/.
			pulled := t.TempDir()
			n, err = blobstore.PullTrial(ctx, s.URL("ns/trial-a/"), pulled)
			if err != nil || n != 7 {
				t.Fatalf("pull = %d, %v; want 7 files", n, err)
			}
			top := filepath.Join(pulled, "trials", "shop_orders_02", "0")
			if b, err := os.ReadFile(filepath.Join(top, "trajectory.yaml")); err != nil || !strings.Contains(string(b), "attempt: 2") {
				t.Errorf("top trajectory = %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(top, "grade.yaml")); !os.IsNotExist(err) {
				t.Errorf("attempt 1's grade on top of attempt 2: %v", err)
			}
			for _, f := range []string{"attempts/1/grade.yaml", "attempts/2/trajectory.yaml"} {
				if _, err := os.Stat(filepath.Join(top, f)); err != nil {
					t.Error(err)
				}
			}
			if _, err := blobstore.PullTrial(ctx, s.URL("ns/none/"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no attempt-<n>/trials/<task_id>/<index>/ objects there") {
				t.Errorf("pull of an empty folder = %v", err)
			}
			if err := s.Delete(ctx, "ns/trial-a/none.yaml"); err != nil {
				t.Errorf("deleting a missing key: %v", err)
			}
			if _, err := s.Get(ctx, "ns/trial-a/none.yaml"); !blobstore.IsNotFound(err) {
				t.Errorf("get missing = %v, want not found", err)
			}
		})
	}
}

// A file:// store is the layout `report` reads: plain files, no sidecars,
// no temporary files left behind.
func TestFileStoreWritesPlainFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	u, err := blobstore.FileURL(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := blobstore.Open(ctxT(t), u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loc, err := artifacts.WriteTo(ctxT(t), s.Sink(""), attempt(1, true))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "trials", "shop_orders_02", "0"); loc != want {
		t.Errorf("location %q, want %q", loc, want)
	}
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(files) != 6 {
		t.Fatalf("files: %q", files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".attrs") || strings.Contains(f, ".tmp") {
			t.Errorf("stray file %s", f)
		}
	}
	if s.URL("a/") != u+"/a/" {
		t.Errorf("URL = %q", s.URL("a/"))
	}
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"ftp://host/x", `scheme "ftp" is not supported (want file://, s3:// or gs://)`},
		{"/plain/dir", "no scheme (want file://, s3:// or gs://)"},
		{"file://relative/dir", `want an absolute path (file:///dir), got host "relative"`},
		{"file:///tmp/x?metadata=skip", "a file:// store takes no parameters"},
		{"s3:///prefix", "no bucket name"},
		{"s3://AKIA:sekrit@bucket/prefix", "artifacts URL s3://bucket: credentials do not belong in the URL"},
	} {
		_, err := blobstore.Open(context.Background(), tc.url)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("Open(%q) error echoes the secret: %v", tc.url, err)
		}
	}
}

// A bucket that does not exist fails the write with the key's URL and
// without the credentials.
func TestS3ErrorsNameTheObjectNotTheSecret(t *testing.T) {
	srv := s3server.Start(t, "results")
	s, err := blobstore.Open(ctxT(t), srv.URL("missing-bucket", "p"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Put(ctxT(t), "a/b.yaml", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "write s3://missing-bucket/p/a/b.yaml") {
		t.Fatalf("put = %v", err)
	}
	if strings.Contains(err.Error(), s3server.SecretAccessKey) {
		t.Fatalf("error carries the secret: %v", err)
	}
	for _, k := range []string{"", "a/", "../x", "a//b", "/abs"} {
		if err := s.Put(ctxT(t), k, nil); err == nil || !strings.Contains(err.Error(), "artifacts key") {
			t.Errorf("Put(%q) = %v", k, err)
		}
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// A write whose context ends before it commits leaves no object (and no
// temporary file) behind: complete or absent.
func TestCanceledWriteLeavesNothing(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := s.Put(ctx, "x/grade.yaml", []byte("binary_pass: true\n")); err == nil {
				t.Fatal("put with a canceled context succeeded")
			}
			if _, err := s.Get(ctxT(t), "x/grade.yaml"); !blobstore.IsNotFound(err) {
				t.Errorf("get after a canceled put = %v, want not found", err)
			}
			keys, err := s.List(ctxT(t), "")
			if err != nil || len(keys) != 0 {
				t.Errorf("keys after a canceled put: %q, %v", keys, err)
			}
			if d := s.Dir(); d != "" {
				ents, _ := os.ReadDir(filepath.Join(d, "x"))
				if len(ents) != 0 {
					t.Errorf("files left in %s: %v", d, ents)
				}
			}
		})
	}
}
