package main

// The Python runner image is built from Debian packages, not from a registry
// base: `image debs` resolves the packages' dependency closure with apt-cache,
// fetches the .debs with apt-get download into a cache directory and records
// them in a lock file; `image build --debs DIR` unpacks exactly the locked
// .debs (dpkg-deb --fsys-tarfile) into one layer. Once the cache is filled the
// build needs no network: a CI job keeps bin/debs and rebuilds offline.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

const (
	// LockFile, in the cache directory, lists the cached .debs: the packages
	// asked for, the architecture, then one line per .deb.
	LockFile = "debs.lock"
	// DebPython is the interpreter the Debian packages install.
	DebPython = "/usr/bin/python3"
)

// DefaultPythonDebs are the packages `make image-python` asks for: the
// interpreter and the libraries packs commonly import (food_delivery_2's
// tools need pydantic and email_validator).
var DefaultPythonDebs = []string{"python3", "python3-yaml", "python3-pydantic", "python3-email-validator"}

// DefaultSkipDebs are dependencies a runtime image does not need: package
// management and the Perl its maintainer scripts use. Their own
// dependencies are not followed either.
var DefaultSkipDebs = []string{"debconf", "dpkg", "install-info", "perl", "perl-base", "tar"}

// debDropPrefixes are paths no one reads at run time; copyright files stay.
var debDropPrefixes = []string{"usr/share/man/", "usr/share/info/", "usr/share/lintian/", "usr/share/locale/", "usr/share/doc/"}

// DebLock is the content of LockFile.
type DebLock struct {
	Roots []string
	Skip  []string
	Arch  string
	Debs  []LockedDeb
}

// LockedDeb is one cached .deb.
type LockedDeb struct {
	Package, Version, Arch, SHA256, File string
}

// goToDebArch maps GOARCH to Debian's architecture names.
var goToDebArch = map[string]string{
	"amd64": "amd64", "arm64": "arm64", "386": "i386", "arm": "armhf",
	"ppc64le": "ppc64el", "s390x": "s390x", "riscv64": "riscv64",
}

// commandRunner runs a command and returns its stdout; tests replace it.
type commandRunner func(ctx context.Context, name string, args ...string) ([]byte, error)

func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// apt's messages in English, whatever the build machine's locale.
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// DebOptions is what `image debs` takes.
type DebOptions struct {
	Cache string
	// Arch is a GOARCH; the packages are fetched for this machine's
	// architecture, which must be the same.
	Arch     string
	Packages []string
	Skip     []string
	run      commandRunner
}

// FetchDebs fills o.Cache with the dependency closure of o.Packages and
// returns its lock. A cache whose lock names the same packages, skips and
// architecture and whose files all match their SHA-256 is used as it is,
// without apt: that is the offline rebuild.
func FetchDebs(ctx context.Context, o DebOptions, log io.Writer) (*DebLock, error) {
	if o.Cache == "" {
		return nil, usageError{"debs: --cache is required"}
	}
	if len(o.Packages) == 0 {
		return nil, usageError{"debs: name at least one package"}
	}
	if o.run == nil {
		o.run = runCommand
	}
	arch, ok := goToDebArch[o.Arch]
	if !ok {
		return nil, fmt.Errorf("debs: --arch %q has no Debian architecture", o.Arch)
	}
	roots := sortedUnique(o.Packages)
	skip := sortedUnique(o.Skip)
	if lock, err := ReadDebLock(o.Cache); err == nil && slicesEqual(lock.Roots, roots) && slicesEqual(lock.Skip, skip) && lock.Arch == arch {
		if err := lock.verify(o.Cache); err == nil {
			fmt.Fprintf(log, "debs: %d packages in %s match %s; apt not needed\n", len(lock.Debs), o.Cache, LockFile)
			return lock, nil
		} else {
			fmt.Fprintf(log, "debs: cache out of date (%v); fetching again\n", err)
		}
	}

	host, err := o.run(ctx, "dpkg", "--print-architecture")
	if err != nil {
		return nil, fmt.Errorf("debs: %w", err)
	}
	if h := strings.TrimSpace(string(host)); h != arch {
		return nil, fmt.Errorf("debs: --arch %s (Debian %s) differs from this machine's %s: apt fetches this machine's packages; build the Python image on a %s machine",
			o.Arch, arch, h, arch)
	}
	names, err := resolveDebs(ctx, o.run, roots, skip)
	if err != nil && len(names) == 0 && os.Geteuid() == 0 {
		// A fresh machine has no package lists yet.
		fmt.Fprintf(log, "debs: %v; running apt-get update\n", err)
		if _, uerr := o.run(ctx, "apt-get", "update"); uerr != nil {
			return nil, fmt.Errorf("debs: %w", uerr)
		}
		names, err = resolveDebs(ctx, o.run, roots, skip)
	}
	if err != nil {
		return nil, fmt.Errorf("debs: %w (are the package lists current? apt-get update)", err)
	}
	debs, err := candidates(ctx, o.run, names)
	if err != nil {
		return nil, fmt.Errorf("debs: %w", err)
	}
	if err := os.MkdirAll(o.Cache, 0o755); err != nil {
		return nil, fmt.Errorf("debs: %w", err)
	}
	if err := download(ctx, o.run, o.Cache, debs, log); err != nil {
		return nil, fmt.Errorf("debs: %w", err)
	}
	lock := &DebLock{Roots: roots, Skip: skip, Arch: arch, Debs: debs}
	if err := lock.write(o.Cache); err != nil {
		return nil, fmt.Errorf("debs: %w", err)
	}
	fmt.Fprintf(log, "debs: %d packages cached in %s\n", len(debs), o.Cache)
	return lock, nil
}

// resolveDebs walks Depends and PreDepends from roots, one apt-cache call per
// level. Of alternatives the first one that is not skipped is taken; a
// virtual package is its first provider. What it returns is sorted.
func resolveDebs(ctx context.Context, run commandRunner, roots, skip []string) ([]string, error) {
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	seen := map[string]bool{}
	var level []string
	for _, r := range roots {
		if skipped[r] {
			return nil, fmt.Errorf("package %s is both asked for and skipped", r)
		}
		seen[r] = true
		level = append(level, r)
	}
	for len(level) > 0 {
		args := append([]string{"depends", "--no-recommends", "--no-suggests", "--no-conflicts",
			"--no-breaks", "--no-replaces", "--no-enhances"}, level...)
		out, err := run(ctx, "apt-cache", args...)
		if err != nil {
			return nil, err
		}
		deps, err := parseDepends(out, skipped)
		if err != nil {
			return nil, err
		}
		for _, l := range level {
			if _, ok := deps[l]; !ok {
				return nil, fmt.Errorf("apt-cache depends: no package %s", l)
			}
		}
		var next []string
		for _, ds := range deps {
			for _, d := range ds {
				if !seen[d] {
					seen[d] = true
					next = append(next, d)
				}
			}
		}
		sort.Strings(next)
		level = next
	}
	return sortedUnique(mapKeys(seen)), nil
}

// parseDepends reads `apt-cache depends` output into each package's chosen
// dependencies.
func parseDepends(out []byte, skipped map[string]bool) (map[string][]string, error) {
	deps := map[string][]string{}
	var cur string
	var group []string // alternatives so far: " |Depends:" lines and the last one
	var virtual bool   // the last dependency was <virtual>: providers follow
	choose := func() error {
		defer func() { group = nil }()
		if len(group) == 0 {
			return nil
		}
		for _, g := range group {
			if skipped[g] {
				return nil // a skipped alternative satisfies the group
			}
		}
		for _, g := range group {
			if !strings.HasPrefix(g, "<") {
				deps[cur] = append(deps[cur], g)
				return nil
			}
		}
		return fmt.Errorf("package %s: dependency %s has no installable provider", cur, strings.Join(group, " | "))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	alt := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case !strings.HasPrefix(line, " "):
			if err := choose(); err != nil {
				return nil, err
			}
			cur, virtual, alt = strings.TrimSpace(line), false, false
			if strings.HasPrefix(cur, "<") {
				return nil, fmt.Errorf("%s is a virtual package; name a real one", cur)
			}
			if _, ok := deps[cur]; !ok {
				deps[cur] = nil
			}
		case strings.HasPrefix(line, "    "):
			// A provider of the virtual package above it.
			if virtual {
				group = append(group, strings.TrimSpace(line))
			}
		default:
			kind, dep, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, " |")), ": ")
			if !ok {
				return nil, fmt.Errorf("apt-cache depends: unexpected line %q", line)
			}
			if !alt {
				if err := choose(); err != nil {
					return nil, err
				}
			}
			alt = strings.HasPrefix(line, " |")
			virtual = strings.HasPrefix(dep, "<")
			if kind != "Depends" && kind != "PreDepends" {
				continue
			}
			// "python3:any" is python3 for any architecture.
			group = append(group, strings.TrimSuffix(dep, ":any"))
		}
	}
	if err := choose(); err != nil {
		return nil, err
	}
	return deps, sc.Err()
}

// candidates reads the version apt would install of each package, with its
// architecture and SHA-256.
func candidates(ctx context.Context, run commandRunner, names []string) ([]LockedDeb, error) {
	out, err := run(ctx, "apt-cache", append([]string{"show", "--no-all-versions"}, names...)...)
	if err != nil {
		return nil, err
	}
	byName := map[string]LockedDeb{}
	for _, stanza := range strings.Split(string(out), "\n\n") {
		var d LockedDeb
		for _, l := range strings.Split(stanza, "\n") {
			k, v, _ := strings.Cut(l, ": ")
			switch k {
			case "Package":
				d.Package = v
			case "Version":
				d.Version = v
			case "Architecture":
				d.Arch = v
			case "SHA256":
				d.SHA256 = v
			}
		}
		if d.Package == "" {
			continue
		}
		if d.Version == "" || d.Arch == "" || len(d.SHA256) != 64 {
			return nil, fmt.Errorf("apt-cache show %s: no version, architecture or SHA256", d.Package)
		}
		if _, dup := byName[d.Package]; !dup {
			byName[d.Package] = d
		}
	}
	debs := make([]LockedDeb, 0, len(names))
	for _, n := range names {
		d, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("apt-cache show: no candidate for %s", n)
		}
		d.File = debFileName(d)
		debs = append(debs, d)
	}
	return debs, nil
}

// debFileName is apt's name for a downloaded .deb (an epoch's colon escaped).
func debFileName(d LockedDeb) string {
	return fmt.Sprintf("%s_%s_%s.deb", d.Package, strings.ReplaceAll(d.Version, ":", "%3a"), d.Arch)
}

// download fetches the .debs the cache lacks, in a staging directory so a
// failed fetch leaves no half file under a locked name.
func download(ctx context.Context, run commandRunner, cache string, debs []LockedDeb, log io.Writer) error {
	var want []string
	for _, d := range debs {
		if fileSHA256(filepath.Join(cache, d.File)) != d.SHA256 {
			want = append(want, d.Package+"="+d.Version)
		}
	}
	if len(want) == 0 {
		return nil
	}
	stage, err := os.MkdirTemp(cache, ".download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	fmt.Fprintf(log, "debs: apt-get download %d packages\n", len(want))
	args := append([]string{"-c", `cd "$1" && shift && exec apt-get download "$@"`, "sh", stage}, want...)
	if _, err := run(ctx, "sh", args...); err != nil {
		return err
	}
	for _, d := range debs {
		dst := filepath.Join(cache, d.File)
		if fileSHA256(dst) == d.SHA256 {
			continue
		}
		src := filepath.Join(stage, d.File)
		if got := fileSHA256(src); got != d.SHA256 {
			return fmt.Errorf("apt-get download %s=%s: %s has SHA-256 %q, the archive says %s", d.Package, d.Version, d.File, got, d.SHA256)
		}
		if err := os.Rename(src, dst); err != nil {
			return err
		}
	}
	return nil
}

// fileSHA256 is "" for a file that cannot be read.
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (l *DebLock) verify(cache string) error {
	for _, d := range l.Debs {
		if got := fileSHA256(filepath.Join(cache, d.File)); got != d.SHA256 {
			if got == "" {
				return fmt.Errorf("%s is missing", filepath.Join(cache, d.File))
			}
			return fmt.Errorf("%s has SHA-256 %s, %s says %s", filepath.Join(cache, d.File), got, LockFile, d.SHA256)
		}
	}
	return nil
}

func (l *DebLock) write(cache string) error {
	var b strings.Builder
	b.WriteString("# Written by hack/image debs; the build reads it (image build --debs).\n")
	fmt.Fprintf(&b, "roots %s\nskip %s\narch %s\n", strings.Join(l.Roots, " "), strings.Join(l.Skip, " "), l.Arch)
	for _, d := range l.Debs {
		fmt.Fprintf(&b, "deb %s %s %s %s %s\n", d.Package, d.Version, d.Arch, d.SHA256, d.File)
	}
	tmp := filepath.Join(cache, LockFile+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(cache, LockFile))
}

// ReadDebLock reads cache/debs.lock.
func ReadDebLock(cache string) (*DebLock, error) {
	path := filepath.Join(cache, LockFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (fill the cache first: image debs --cache %s)", path, err, cache)
	}
	return ParseDebLock(b, path)
}

// ParseDebLock decodes a lock file; what names it in errors.
func ParseDebLock(b []byte, what string) (*DebLock, error) {
	l := &DebLock{}
	var haveArch bool
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(msg string) error { return fmt.Errorf("%s:%d: %s: %q", what, i+1, msg, line) }
		switch f[0] {
		case "roots":
			l.Roots = f[1:]
		case "skip":
			l.Skip = f[1:]
		case "arch":
			if len(f) != 2 {
				return nil, bad("want `arch NAME`")
			}
			l.Arch, haveArch = f[1], true
		case "deb":
			if len(f) != 6 {
				return nil, bad("want `deb PACKAGE VERSION ARCH SHA256 FILE`")
			}
			d := LockedDeb{Package: f[1], Version: f[2], Arch: f[3], SHA256: f[4], File: f[5]}
			if _, err := hex.DecodeString(d.SHA256); err != nil || len(d.SHA256) != 64 {
				return nil, bad("SHA256 is not 64 hex digits")
			}
			if d.File != filepath.Base(d.File) || !strings.HasSuffix(d.File, ".deb") || strings.HasPrefix(d.File, ".") {
				return nil, bad("FILE must be a .deb name inside the cache directory")
			}
			l.Debs = append(l.Debs, d)
		default:
			return nil, bad("unknown key " + f[0])
		}
	}
	if !haveArch || len(l.Roots) == 0 || len(l.Debs) == 0 {
		return nil, fmt.Errorf("%s: want roots, arch and at least one deb line", what)
	}
	return l, nil
}

// debLayerEntries unpacks every locked .deb (dpkg-deb --fsys-tarfile: the
// package's files with their owners and modes, which dpkg-deb -x as a
// non-root user would lose) into the entries of one layer, in lock order.
// A path two packages ship is kept from the first; directories are shared.
func debLayerEntries(ctx context.Context, run commandRunner, cache string, lock *DebLock) ([]entry, error) {
	if err := lock.verify(cache); err != nil {
		return nil, fmt.Errorf("build: --debs %s: %w (run image debs again)", cache, err)
	}
	var out []entry
	seen := map[string]byte{}
	for _, d := range lock.Debs {
		data, err := run(ctx, "dpkg-deb", "--fsys-tarfile", filepath.Join(cache, d.File))
		if err != nil {
			return nil, fmt.Errorf("build: unpack %s: %w", d.File, err)
		}
		tr := tar.NewReader(bytes.NewReader(data))
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("build: unpack %s: %w", d.File, err)
			}
			name := debPath(h.Name)
			if name == "" || dropDebPath(name) {
				continue
			}
			if strings.HasPrefix(name, "../") || name == ".." {
				return nil, fmt.Errorf("build: unpack %s: entry %q leaves the root", d.File, h.Name)
			}
			if t, dup := seen[name]; dup {
				if t == tar.TypeDir && h.Typeflag == tar.TypeDir {
					continue
				}
				return nil, fmt.Errorf("build: unpack %s: %s is shipped by an earlier package too", d.File, name)
			}
			seen[name] = h.Typeflag
			e := entry{hdr: tar.Header{
				Typeflag: h.Typeflag, Name: name, Mode: h.Mode, Uid: h.Uid, Gid: h.Gid,
				Uname: h.Uname, Gname: h.Gname, Size: h.Size, Linkname: h.Linkname,
			}}
			switch h.Typeflag {
			case tar.TypeDir:
				e.hdr.Name += "/"
				e.hdr.Size = 0
			case tar.TypeReg:
				if e.body, err = io.ReadAll(tr); err != nil {
					return nil, fmt.Errorf("build: unpack %s: %s: %w", d.File, name, err)
				}
			case tar.TypeLink:
				e.hdr.Linkname = debPath(h.Linkname)
				e.hdr.Size = 0
			case tar.TypeSymlink:
				e.hdr.Size = 0
			default:
				return nil, fmt.Errorf("build: unpack %s: %s has tar type %q, which a package should not ship", d.File, name, h.Typeflag)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// debPath turns a data.tar name ("./usr/bin/x") into a layer path.
func debPath(n string) string {
	n = strings.TrimPrefix(n, "./")
	n = strings.TrimPrefix(n, "/")
	return strings.TrimSuffix(n, "/")
}

func dropDebPath(name string) bool {
	for _, p := range debDropPrefixes {
		if name+"/" == p {
			return p != "usr/share/doc/"
		}
		if !strings.HasPrefix(name, p) {
			continue
		}
		if p == "usr/share/doc/" {
			// Licences travel with the binaries: each package's directory
			// and its copyright stay.
			rest := strings.TrimPrefix(name, p)
			return !(strings.Count(rest, "/") == 0 || filepath.Base(name) == "copyright")
		}
		return true
	}
	return false
}

func sortedUnique(s []string) []string {
	m := map[string]bool{}
	var out []string
	for _, v := range s {
		if v != "" && !m[v] {
			m[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Labels of a Python image: the interpreter the manager passes to the
// runner (--python) and the Debian packages it was built from.
const (
	LabelPython = "io.tolokaforge.image.python"
	LabelDebs   = "io.tolokaforge.image.debian-packages"
)

// debLayer is the unpacked packages, ready for assemble.
type debLayer struct {
	entries []entry
	what    string
	summary string // "name=version ..." for LabelDebs
}

// loadDebs reads o.Debs's lock and unpacks its packages; nil without --debs.
func loadDebs(ctx context.Context, o BuildOptions) (*debLayer, error) {
	if o.Debs == "" {
		return nil, nil
	}
	lock, err := ReadDebLock(o.Debs)
	if err != nil {
		return nil, fmt.Errorf("build: --debs: %w", err)
	}
	if want := goToDebArch[o.Arch]; lock.Arch != want {
		return nil, fmt.Errorf("build: --debs %s holds %s packages, --arch %s needs %s", o.Debs, lock.Arch, o.Arch, want)
	}
	entries, err := debLayerEntries(ctx, runCommand, o.Debs, lock)
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, d := range lock.Debs {
		pkgs = append(pkgs, d.Package+"="+d.Version)
	}
	return &debLayer{
		entries: entries,
		what:    fmt.Sprintf("Debian packages %s and their dependencies (%d)", strings.Join(lock.Roots, ", "), len(lock.Debs)),
		summary: strings.Join(pkgs, " "),
	}, nil
}
