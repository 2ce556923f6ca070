package main

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushRoundTrip pushes a built layout to an in-process registry on
// loopback and pulls it back: the digest must survive the trip.
func TestPushRoundTrip(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tolokaforge")
	if err := os.WriteFile(bin, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tolokaforge-toolexec", "tolokaforge-execagent"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "layout")
	res, err := Build(context.Background(), BuildOptions{Binary: bin, Version: "v1.2.3", Name: "tolokaforge",
		Out: out, CACerts: ca, Arch: "amd64"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ref != "tolokaforge:v1.2.3" {
		t.Errorf("ref %q, want tolokaforge:v1.2.3", res.Ref)
	}
	dst := u.Host + "/team/tolokaforge:v1.2.3"
	d, err := Push(context.Background(), out, dst)
	if err != nil {
		t.Fatal(err)
	}
	if d != res.Digest {
		t.Errorf("pushed digest %s, built %s", d, res.Digest)
	}
	ref, err := name.ParseReference(dst)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pull back: %v", err)
	}
	if got, _ := img.Digest(); got != res.Digest {
		t.Errorf("pulled digest %s, want %s", got, res.Digest)
	}

	// Same inputs, same digest: timestamps are fixed, so rebuilds reproduce.
	again, err := Build(context.Background(), BuildOptions{Binary: bin, Version: "v1.2.3", Name: "tolokaforge",
		Out: filepath.Join(dir, "again"), CACerts: ca, Arch: "amd64"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != res.Digest {
		t.Errorf("rebuild digest %s, first %s: the build is not reproducible", again.Digest, res.Digest)
	}
}

func TestVersionFromSource(t *testing.T) {
	for _, tc := range []struct{ src, want, err string }{
		{"package main\n\nvar version = \"v0.3.1\"\n", "v0.3.1", ""},
		{"package main\n\nvar version string\n", "", "no `var version"},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, filepath.FromSlash(VersionFile))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := VersionFromSource(dir)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("VersionFromSource(%q) = %q, %v; want %q, %q", tc.src, got, err, tc.want, tc.err)
		}
	}
	if _, err := VersionFromSource(t.TempDir()); err == nil || !strings.Contains(err.Error(), "read version") {
		t.Errorf("missing %s: %v, want a read version error", VersionFile, err)
	}
	// The checkout's own file is where the constants say.
	if v, err := VersionFromSource(filepath.Join("..", "..")); err != nil || !strings.HasPrefix(v, "v") {
		t.Errorf("VersionFromSource(the checkout) = %q, %v", v, err)
	}
}

// The runner's tool limits wrapper and the exec agent land beside the
// binary, executable: the ones beside --binary by default, or the ones
// --launcher and --execagent name; without one the build fails naming where
// it looked.
func TestBuildAddsTheLauncher(t *testing.T) {
	dir := t.TempDir()
	writeFile := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin := writeFile("tolokaforge", "binary\n", 0o755)
	ca := writeFile("ca.crt", "-----BEGIN CERTIFICATE-----\n", 0o644)
	other := filepath.Join(t.TempDir(), "tolokaforge")
	if err := os.WriteFile(other, []byte("binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agentOther := filepath.Join(filepath.Dir(other), "agent-elsewhere")
	if err := os.WriteFile(agentOther, []byte("agent explicit\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := func(bin, launcher string) BuildOptions {
		agent := ""
		if launcher != "" {
			agent = agentOther
		}
		return BuildOptions{Binary: bin, Launcher: launcher, ExecAgent: agent, Version: "v1.2.3", Name: "tolokaforge",
			Out: filepath.Join(t.TempDir(), "layout"), CACerts: ca, Arch: "amd64"}
	}

	beside := filepath.Join(dir, "tolokaforge-toolexec")
	if _, err := Build(context.Background(), opts(bin, ""), io.Discard); err == nil || !strings.Contains(err.Error(), beside) {
		t.Fatalf("no launcher: %v, want an error naming %s", err, beside)
	}
	writeFile("tolokaforge-toolexec", "beside\n", 0o755)
	agentBeside := filepath.Join(dir, "tolokaforge-execagent")
	if _, err := Build(context.Background(), opts(bin, ""), io.Discard); err == nil || !strings.Contains(err.Error(), agentBeside) {
		t.Fatalf("no exec agent: %v, want an error naming %s", err, agentBeside)
	}
	writeFile("tolokaforge-execagent", "agent beside\n", 0o755)
	explicit := writeFile("toolexec-elsewhere", "explicit\n", 0o644)
	for _, tc := range []struct {
		name, bin, launcher, want, agent string
	}{
		{"beside the binary", bin, "", "beside\n", "agent beside\n"},
		{"--launcher and --execagent", other, explicit, "explicit\n", "agent explicit\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(tc.bin, tc.launcher)
			if _, err := Build(context.Background(), o, io.Discard); err != nil {
				t.Fatal(err)
			}
			img, err := imageFromLayout(o.Out)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]*tar.Header{}
			bodies := map[string]string{}
			tr := tar.NewReader(mutate.Extract(img))
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				files[h.Name], bodies[h.Name] = h, string(b)
			}
			h := files[strings.TrimPrefix(LauncherPath, "/")]
			if h == nil || h.Mode&0o777 != 0o755 || h.Uid != 0 || bodies[h.Name] != tc.want {
				t.Errorf("%s: header %+v body %q, want root-owned 0755 holding %q", LauncherPath, h, bodies[strings.TrimPrefix(LauncherPath, "/")], tc.want)
			}
			a := strings.TrimPrefix(ExecAgentPath, "/")
			if h := files[a]; h == nil || h.Mode&0o777 != 0o755 || h.Uid != 0 || bodies[a] != tc.agent {
				t.Errorf("%s: header %+v body %q, want root-owned 0755 holding %q", ExecAgentPath, h, bodies[a], tc.agent)
			}
			if bodies[strings.TrimPrefix(BinaryPath, "/")] != "binary\n" {
				t.Errorf("%s = %q, want the binary", BinaryPath, bodies[strings.TrimPrefix(BinaryPath, "/")])
			}
		})
	}
}
