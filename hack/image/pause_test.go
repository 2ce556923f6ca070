package main

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestPauseImage builds the sandbox image and checks what containerd reads
// from it: the ref, the entrypoint, a non-root user and one layer.
func TestPauseImage(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "layout")
	res, err := BuildPause(context.Background(), PauseOptions{Module: ".", Out: out, Tarball: filepath.Join(dir, "pause.tar"), Arch: "amd64"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref != PauseRef {
		t.Errorf("ref %q, want %q", res.Ref, PauseRef)
	}
	idx, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/pause" {
		t.Errorf("entrypoint %q, want [/pause]", got)
	}
	if cf.Config.User != "65535:65535" {
		t.Errorf("user %q, want 65535:65535", cf.Config.User)
	}
	if ls, err := img.Layers(); err != nil || len(ls) != 1 {
		t.Errorf("layers %d (%v), want 1", len(ls), err)
	}
}

// TestPauseExitsOnSignal: kubelet stops a sandbox with TERM and waits; a
// pause that ignored it would hold every pod deletion for the grace period.
func TestPauseExitsOnSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if out, err := exec.Command("go", "build", "-o", bin, "./pause").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(bin)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // let it install its handler
		_ = cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: exit %v, want 0", sig, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%v: pause still running after 5s", sig)
		}
	}
}
