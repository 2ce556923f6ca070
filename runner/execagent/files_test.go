package execagent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "tolokaforge.io/operator/api/execagentpb"
	"tolokaforge.io/operator/runner/execagent"
)

func wantCode(t *testing.T, err error, code codes.Code, naming string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s naming %q", code, naming)
	}
	if got := status.Code(err); got != code || !strings.Contains(err.Error(), naming) {
		t.Fatalf("error %v (%s), want %s naming %q", err, got, code, naming)
	}
}

func TestWriteFile(t *testing.T) {
	a := startAgent(t, func(o *execagent.Options) { o.MaxFileBytes = 1 << 20 })
	dir := t.TempDir()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  *pb.WriteFileRequest
		code codes.Code
		msg  string
	}{
		{"writes", &pb.WriteFileRequest{Path: dir + "/a.txt", Content: []byte("hello"), Mode: 0o600}, codes.OK, ""},
		{"mkdir parents", &pb.WriteFileRequest{Path: dir + "/x/y/z.txt", Content: []byte("deep"), MkdirParents: true}, codes.OK, ""},
		{"no parent", &pb.WriteFileRequest{Path: dir + "/missing/z.txt", Content: []byte("x")}, codes.NotFound, dir + "/missing"},
		{"relative", &pb.WriteFileRequest{Path: "rel/a.txt"}, codes.InvalidArgument, "rel/a.txt"},
		{"not clean", &pb.WriteFileRequest{Path: dir + "/../a.txt"}, codes.InvalidArgument, dir + "/../a.txt"},
		{"over the limit", &pb.WriteFileRequest{Path: dir + "/big", Content: make([]byte, 1<<20+1)}, codes.InvalidArgument, "over the limit"},
		{"a directory", &pb.WriteFileRequest{Path: dir + "/x", Content: []byte("x")}, codes.FailedPrecondition, dir + "/x"},
		{"unknown user", &pb.WriteFileRequest{Path: dir + "/u", User: "no-such-user-xyz"}, codes.InvalidArgument, "no-such-user-xyz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := a.c.WriteFile(ctx, tc.req)
			if tc.code != codes.OK {
				wantCode(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tc.req.Path)
			if err != nil || !bytes.Equal(got, tc.req.Content) || resp.BytesWritten != int64(len(got)) {
				t.Fatalf("file %q (%v), %d written; want %q", got, err, resp.BytesWritten, tc.req.Content)
			}
			fi, _ := os.Stat(tc.req.Path)
			want := os.FileMode(tc.req.Mode)
			if want == 0 {
				want = 0o644
			}
			if fi.Mode().Perm() != want {
				t.Fatalf("mode %v, want %v", fi.Mode().Perm(), want)
			}
		})
	}
	if _, err := os.Stat(dir + "/big"); !os.IsNotExist(err) {
		t.Fatalf("the refused file exists: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("a temporary file was left behind: %s", e.Name())
		}
	}
}

// A reader never sees a half-written file: each read is one of the
// complete versions.
func TestWriteFileIsAtomic(t *testing.T) {
	a := startAgent(t, nil)
	p := filepath.Join(t.TempDir(), "f")
	versions := [][]byte{bytes.Repeat([]byte("A"), 256<<10), bytes.Repeat([]byte("B"), 512<<10)}
	if _, err := a.c.WriteFile(context.Background(), &pb.WriteFileRequest{Path: p, Content: versions[0]}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad []int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(p)
			if err != nil || !(bytes.Equal(got, versions[0]) || bytes.Equal(got, versions[1])) {
				bad = append(bad, len(got))
			}
		}
	}()
	for i := 0; i < 20; i++ {
		if _, err := a.c.WriteFile(context.Background(), &pb.WriteFileRequest{Path: p, Content: versions[i%2]}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("%d reads saw a partial file (sizes %v)", len(bad), bad[:min(len(bad), 5)])
	}
}

func TestReadFileAndListDir(t *testing.T) {
	a := startAgent(t, nil)
	dir := t.TempDir()
	must(t, os.WriteFile(dir+"/f", []byte("0123456789"), 0o640))
	must(t, os.Mkdir(dir+"/d", 0o755))
	must(t, os.Symlink("f", dir+"/l"))
	must(t, syscall.Mkfifo(dir+"/fifo", 0o644))
	ctx := context.Background()

	for _, tc := range []struct {
		name    string
		req     *pb.ReadFileRequest
		content string
		cut     bool
		code    codes.Code
		msg     string
	}{
		{name: "whole", req: &pb.ReadFileRequest{Path: dir + "/f"}, content: "0123456789"},
		{name: "truncated", req: &pb.ReadFileRequest{Path: dir + "/f", MaxBytes: 4}, content: "0123", cut: true},
		{name: "through a link", req: &pb.ReadFileRequest{Path: dir + "/l"}, content: "0123456789"},
		{name: "a directory", req: &pb.ReadFileRequest{Path: dir + "/d"}, code: codes.FailedPrecondition, msg: dir + "/d"},
		{name: "a FIFO, without hanging", req: &pb.ReadFileRequest{Path: dir + "/fifo"}, code: codes.FailedPrecondition, msg: dir + "/fifo"},
		{name: "missing", req: &pb.ReadFileRequest{Path: dir + "/nope"}, code: codes.NotFound, msg: dir + "/nope"},
		{name: "relative", req: &pb.ReadFileRequest{Path: "f"}, code: codes.InvalidArgument, msg: `"f"`},
	} {
		t.Run("read "+tc.name, func(t *testing.T) {
			resp, err := a.c.ReadFile(ctx, tc.req)
			if tc.code != codes.OK {
				wantCode(t, err, tc.code, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(resp.Content) != tc.content || resp.Size != 10 || resp.Truncated != tc.cut {
				t.Fatalf("content %q size %d truncated %v, want %q 10 %v", resp.Content, resp.Size, resp.Truncated, tc.content, tc.cut)
			}
		})
	}

	resp, err := a.c.ListDir(ctx, &pb.ListDirRequest{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range resp.Entries {
		got = append(got, e.Name+":"+e.Type.String())
	}
	if want := "d:DIR f:FILE fifo:OTHER l:SYMLINK"; strings.Join(got, " ") != want {
		t.Fatalf("entries %v, want %s", got, want)
	}
	if f := resp.Entries[1]; f.Size != 10 || f.Mode != 0o640 {
		t.Fatalf("f: size %d mode %o, want 10 640", f.Size, f.Mode)
	}
	_, err = a.c.ListDir(ctx, &pb.ListDirRequest{Path: dir + "/f"})
	wantCode(t, err, codes.FailedPrecondition, dir+"/f")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The default limit (64 MiB) passes through gRPC: a file of exactly the
// limit is written; one byte more is refused by the agent, naming the
// limit, not by the transport.
func TestWriteFileDefaultLimitFitsTheMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 128 MiB")
	}
	a := startAgent(t, nil)
	p := filepath.Join(t.TempDir(), "big")
	content := make([]byte, execagent.DefaultMaxFileBytes)
	resp, err := a.c.WriteFile(context.Background(), &pb.WriteFileRequest{Path: p, Content: content})
	if err != nil || resp.BytesWritten != execagent.DefaultMaxFileBytes {
		t.Fatalf("writing %d bytes: %v %v", len(content), resp, err)
	}
	_, err = a.c.WriteFile(context.Background(), &pb.WriteFileRequest{Path: p, Content: append(content, 0)})
	wantCode(t, err, codes.InvalidArgument, "over the limit of 67108864")
}
