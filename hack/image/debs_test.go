package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseDepends(t *testing.T) {
	skip := map[string]bool{"perl": true}
	tests := []struct {
		name    string
		out     string
		want    map[string][]string
		wantErr string
	}{
		{name: "plain and pre-depends", out: "python3.11-minimal\n  PreDepends: libc6\n  Depends: zlib1g\n",
			want: map[string][]string{"python3.11-minimal": {"libc6", "zlib1g"}}},
		{name: "first alternative", out: "libpython3.11-stdlib\n |Depends: media-types\n  Depends: mime-support\n  Depends: libc6\n",
			want: map[string][]string{"libpython3.11-stdlib": {"media-types", "libc6"}}},
		{name: "a skipped alternative satisfies the group", out: "x\n |Depends: perl\n  Depends: mawk\n",
			want: map[string][]string{"x": nil}},
		{name: "skipped dependency", out: "x\n  Depends: perl\n  Depends: libc6\n",
			want: map[string][]string{"x": {"libc6"}}},
		{name: "virtual is its first provider", out: "python3-pydantic\n  Depends: python3-typing-extensions\n  Depends: <python3:any>\n    python3\n    python3-dbg\n",
			want: map[string][]string{"python3-pydantic": {"python3-typing-extensions", "python3"}}},
		{name: "two packages", out: "a\n  Depends: c\nb\n  Depends: d\n",
			want: map[string][]string{"a": {"c"}, "b": {"d"}}},
		{name: "virtual without provider", out: "a\n  Depends: <nothing>\n",
			wantErr: "package a: dependency <nothing> has no installable provider"},
		{name: "garbage line", out: "a\n  what\n", wantErr: `apt-cache depends: unexpected line "  what"`},
		{name: "virtual asked for", out: "<mail-transport-agent>\n", wantErr: "<mail-transport-agent> is a virtual package; name a real one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDepends([]byte(tc.out), skip)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDropDebPath(t *testing.T) {
	for name, drop := range map[string]bool{
		"usr/bin/python3.11":                           false,
		"usr/share/man":                                true,
		"usr/share/man/man1/python3.1.gz":              true,
		"usr/share/locale/de/LC_MESSAGES/x.mo":         true,
		"usr/share/doc":                                false,
		"usr/share/doc/python3.11":                     false,
		"usr/share/doc/python3.11/copyright":           false,
		"usr/share/doc/python3.11/changelog.Debian.gz": true,
		"usr/share/doc/python3.11/examples/x.py":       true,
		"usr/share/manifest":                           false,
	} {
		if got := dropDebPath(name); got != drop {
			t.Errorf("dropDebPath(%q) = %v, want %v", name, got, drop)
		}
	}
}

func TestParseDebLock(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	good := "# comment\nroots python3\nskip perl\narch amd64\ndeb python3 3.11.2-1+b1 amd64 " + sum + " python3_3.11.2-1+b1_amd64.deb\n"
	l, err := ParseDebLock([]byte(good), "debs.lock")
	if err != nil {
		t.Fatal(err)
	}
	want := &DebLock{Roots: []string{"python3"}, Skip: []string{"perl"}, Arch: "amd64",
		Debs: []LockedDeb{{Package: "python3", Version: "3.11.2-1+b1", Arch: "amd64", SHA256: sum, File: "python3_3.11.2-1+b1_amd64.deb"}}}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("got %+v, want %+v", l, want)
	}
	for _, tc := range []struct{ in, wantErr string }{
		{"roots a\narch amd64\ndeb a 1 amd64 " + sum + " ../a.deb\n", `debs.lock:3: FILE must be a .deb name inside the cache directory: "deb a 1 amd64 ` + sum + ` ../a.deb"`},
		{"roots a\narch amd64\ndeb a 1 amd64 xyz a.deb\n", `debs.lock:3: SHA256 is not 64 hex digits: "deb a 1 amd64 xyz a.deb"`},
		{"roots a\narch amd64\ndeb a 1 amd64\n", "debs.lock:3: want `deb PACKAGE VERSION ARCH SHA256 FILE`"},
		{"roots a\narch\n", "debs.lock:2: want `arch NAME`"},
		{"roots a\nfrom x\n", "debs.lock:2: unknown key from"},
		{"roots a\narch amd64\n", "debs.lock: want roots, arch and at least one deb line"},
	} {
		_, err := ParseDebLock([]byte(tc.in), "debs.lock")
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("ParseDebLock(%q): err %v, want %q", tc.in, err, tc.wantErr)
		}
	}
}

// FuzzParseDebLock: a lock file never panics the parser, and what it accepts
// writes back to a lock that parses to the same value.
func FuzzParseDebLock(f *testing.F) {
	sum := strings.Repeat("0f", 32)
	f.Add("roots python3\nskip perl\narch amd64\ndeb python3 3.11 amd64 " + sum + " python3_3.11_amd64.deb\n")
	f.Add("roots\narch\n")
	f.Add("deb a b c d e\n")
	f.Add("\n\n#\n")
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ParseDebLock([]byte(in), "lock")
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := l.write(dir); err != nil {
			t.Fatal(err)
		}
		again, err := ReadDebLock(dir)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !reflect.DeepEqual(again.Debs, l.Debs) || again.Arch != l.Arch {
			t.Errorf("round trip changed the lock: %+v -> %+v", l, again)
		}
	})
}

// TestFetchDebsOffline: a cache whose lock matches is used without running
// apt (the offline CI rebuild); a file that no longer matches its SHA-256
// sends FetchDebs back to apt.
func TestFetchDebsOffline(t *testing.T) {
	dir := t.TempDir()
	body := []byte("not really a deb")
	sum := sha256.Sum256(body)
	if err := os.WriteFile(filepath.Join(dir, "a_1_amd64.deb"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	lock := &DebLock{Roots: []string{"a"}, Skip: []string{"perl"}, Arch: "amd64",
		Debs: []LockedDeb{{Package: "a", Version: "1", Arch: "amd64", SHA256: hex.EncodeToString(sum[:]), File: "a_1_amd64.deb"}}}
	if err := lock.write(dir); err != nil {
		t.Fatal(err)
	}
	var ran []string
	noApt := func(_ context.Context, name string, args ...string) ([]byte, error) {
		ran = append(ran, name+" "+strings.Join(args, " "))
		return nil, errors.New("offline")
	}
	got, err := FetchDebs(context.Background(), DebOptions{Cache: dir, Arch: "amd64", Packages: []string{"a"}, Skip: []string{"perl"}, run: noApt}, io.Discard)
	if err != nil {
		t.Fatalf("warm cache: %v (ran %q)", err, ran)
	}
	if len(ran) != 0 || !reflect.DeepEqual(got, lock) {
		t.Errorf("warm cache ran %q and returned %+v, want no commands and the lock", ran, got)
	}

	// Other packages asked for: the lock does not apply.
	_, err = FetchDebs(context.Background(), DebOptions{Cache: dir, Arch: "amd64", Packages: []string{"a", "b"}, Skip: []string{"perl"}, run: noApt}, io.Discard)
	if err == nil || len(ran) == 0 || ran[0] != "dpkg --print-architecture" {
		t.Errorf("changed roots: err %v, ran %q; want apt consulted", err, ran)
	}

	ran = nil
	if err := os.WriteFile(filepath.Join(dir, "a_1_amd64.deb"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = FetchDebs(context.Background(), DebOptions{Cache: dir, Arch: "amd64", Packages: []string{"a"}, Skip: []string{"perl"}, run: noApt}, io.Discard)
	if err == nil || len(ran) == 0 {
		t.Errorf("changed .deb: err %v, ran %q; want apt consulted", err, ran)
	}
}

func TestFetchDebsForeignArch(t *testing.T) {
	run := func(_ context.Context, name string, args ...string) ([]byte, error) {
		if name == "dpkg" {
			return []byte("amd64\n"), nil
		}
		t.Fatalf("ran %s %q after the architecture check", name, args)
		return nil, nil
	}
	_, err := FetchDebs(context.Background(), DebOptions{Cache: t.TempDir(), Arch: "arm64", Packages: []string{"python3"}, run: run}, io.Discard)
	want := "debs: --arch arm64 (Debian arm64) differs from this machine's amd64: apt fetches this machine's packages; build the Python image on a arm64 machine"
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}
}

func TestBuildDebsRefusals(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tolokaforge")
	if err := os.WriteFile(bin, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o       BuildOptions
		wantErr string
	}{
		{BuildOptions{Binary: bin, Version: "v1", Name: "tolokaforge", Out: filepath.Join(dir, "o"), Debs: dir, Base: "oci:" + dir, Arch: "amd64"},
			"build: --debs builds on the empty base; give --debs or --base, not both"},
		{BuildOptions{Binary: bin, Version: "v1", Name: "tolokaforge", Out: filepath.Join(dir, "o"), Debs: filepath.Join(dir, "none"), Arch: "amd64"},
			"build: --debs: read " + filepath.Join(dir, "none", LockFile)},
	} {
		_, err := Build(context.Background(), tc.o, io.Discard)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("err %v, want %q", err, tc.wantErr)
		}
		if _, serr := os.Stat(tc.o.Out); serr == nil {
			t.Errorf("%s written by a refused build", tc.o.Out)
		}
	}
}
