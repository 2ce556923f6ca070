// Package blobstore keeps Tolokaforge's artifacts layout in a blob store:
// a local directory (file://), an S3-compatible bucket (s3://) or Google
// Cloud Storage (gs://), all through gocloud.dev/blob so the host and the
// commands read and write one API whatever the store.
//
// Every object is written whole or not at all (a blob writer commits on
// Close; fileblob renames a finished temporary file into place), so a reader
// never sees half of a file. Credentials come from the provider's standard
// environment (AWS_* variables and ~/.aws, Application Default Credentials);
// a URL carrying a user or password is refused, so no secret ends up in a
// flag, a log line or a Trial's status.
//
// A file:// store is read below its directory only (api/rootfs): a
// symbolic link in it that leaves the directory is refused, naming the link
// and its target, so `report` and `results pull` never copy a file from
// elsewhere on the machine.
//
// URLs:
//
//	file:///abs/dir
//	s3://bucket/prefix?region=R&endpoint=http://host:port&use_path_style=true
//	gs://bucket/prefix
//
// The query parameters are gocloud's (s3blob, gcsblob).
//
// Imports: api/artifacts, api/rootfs, the standard library and gocloud.dev.
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob" // s3://
	"gocloud.dev/gcerrors"

	"tolokaforge.io/operator/api/artifacts"
	"tolokaforge.io/operator/api/rootfs"
)

// Schemes the store opens.
const (
	schemeFile = "file"
	schemeS3   = "s3"
	schemeGCS  = "gs"
)

// Store is an opened bucket and the URL it was opened from.
type Store struct {
	bucket *blob.Bucket
	// base is the URL of the store's root without query or trailing slash:
	// what keys are appended to for display and for Trial status.
	base string
	// query is the URL's query (s3blob/gcsblob parameters: endpoint,
	// region, ...; never a secret), kept on the URLs the store hands out so
	// each of them opens again with Open.
	query string
	// dir is the local directory of a file:// store, else "".
	dir string
	// root reads a file:// store: below dir only (fileblob itself would
	// follow a link anywhere).
	root *rootfs.Root
}

// IsURL says whether s names a store (file://, s3://, gs://) rather than a
// plain local path.
func IsURL(s string) bool {
	for _, p := range []string{schemeFile, schemeS3, schemeGCS} {
		if strings.HasPrefix(s, p+"://") {
			return true
		}
	}
	return false
}

// FileURL is the file:// URL of a local directory (made absolute).
func FileURL(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("artifacts directory %s: %w", dir, err)
	}
	return (&url.URL{Scheme: schemeFile, Path: filepath.ToSlash(abs)}).String(), nil
}

// Open opens the store raw names. A file:// directory is created if missing.
func Open(ctx context.Context, raw string) (*Store, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("artifacts URL: %w", err)
	}
	if u.User != nil {
		// Not echoing raw: it holds the secret.
		return nil, fmt.Errorf("artifacts URL %s://%s: credentials do not belong in the URL; use the provider's environment (AWS_ACCESS_KEY_ID, ~/.aws, GOOGLE_APPLICATION_CREDENTIALS)", u.Scheme, u.Host)
	}
	switch u.Scheme {
	case schemeFile:
		return openFile(u)
	case schemeS3, schemeGCS:
		if u.Host == "" {
			return nil, fmt.Errorf("artifacts URL %q: no bucket name", raw)
		}
		prefix := strings.Trim(u.Path, "/")
		q := u.Query()
		if prefix != "" {
			q.Set("prefix", prefix+"/")
		}
		open := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: q.Encode()}
		b, err := blob.OpenBucket(ctx, open.String())
		if err != nil {
			return nil, fmt.Errorf("artifacts URL %s: %w", display(u), err)
		}
		base := u.Scheme + "://" + u.Host
		if prefix != "" {
			base += "/" + prefix
		}
		u.RawQuery = strings.TrimPrefix(u.RawQuery, "?")
		return &Store{bucket: b, base: base, query: u.RawQuery}, nil
	case "":
		return nil, fmt.Errorf("artifacts URL %q: no scheme (want file://, s3:// or gs://)", raw)
	default:
		return nil, fmt.Errorf("artifacts URL %q: scheme %q is not supported (want file://, s3:// or gs://)", raw, u.Scheme)
	}
}

func openFile(u *url.URL) (*Store, error) {
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("artifacts URL %q: want an absolute path (file:///dir), got host %q", u.String(), u.Host)
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("artifacts URL %q: a file:// store takes no parameters", u.String())
	}
	dir := filepath.FromSlash(u.Path)
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("artifacts URL %q: want an absolute path (file:///dir)", u.String())
	}
	dir = filepath.Clean(dir)
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{
		CreateDir: true,
		// The layout is read as plain files by `report`: no .attrs sidecars.
		Metadata: fileblob.MetadataDontWrite,
		// Temporary files beside their targets, so the rename that makes a
		// write complete never crosses a mount.
		NoTempDir:   true,
		DirFileMode: 0o755,
	})
	if err != nil {
		return nil, fmt.Errorf("artifacts directory %s: %w", dir, err)
	}
	root, err := rootfs.Open(dir)
	if err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("artifacts directory %s: %w", dir, err)
	}
	return &Store{bucket: b, base: (&url.URL{Scheme: schemeFile, Path: filepath.ToSlash(dir)}).String(), dir: dir, root: root}, nil
}

// display is u without its query (which may name endpoints, never secrets,
// but is noise in messages).
func display(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.Path
}

// Close releases the bucket.
func (s *Store) Close() error {
	if s.root != nil {
		_ = s.root.Close()
	}
	return s.bucket.Close()
}

// URL is the URL of key (a slash-separated name under the store's root); a
// key ending in "/" names a folder.
func (s *Store) URL(key string) string {
	u := s.base + "/" + strings.TrimPrefix(key, "/")
	if s.query != "" {
		u += "?" + s.query
	}
	return u
}

// name is key's URL without the query, for messages.
func (s *Store) name(key string) string {
	return s.base + "/" + strings.TrimPrefix(key, "/")
}

// Location is where key is for a person: the local path in a file:// store
// (what `report` links to), else its URL without the query.
func (s *Store) Location(key string) string {
	if s.dir != "" {
		return filepath.Join(s.dir, filepath.FromSlash(key))
	}
	return s.name(key)
}

// Dir is the local directory of a file:// store, else "".
func (s *Store) Dir() string { return s.dir }

// Put writes one object whole: a failed or canceled write leaves the key as
// it was.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.bucket.WriteAll(ctx, key, data, nil); err != nil {
		return fmt.Errorf("write %s: %w", s.name(key), err)
	}
	return nil
}

// Delete removes key; a key that is not there is no error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := s.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("delete %s: %w", s.name(key), err)
	}
	return nil
}

// Get reads one object. In a file:// store a symbolic link is followed only
// while it stays inside the store's directory: one that leaves it is
// refused, naming the link and its target (a store is read by `report` and
// `results pull`, and a planted link would copy any file the reader can see
// into their output); so is anything but a regular file.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	return s.GetLimit(ctx, key, 0)
}

// GetLimit is Get refusing an object over limit bytes (limit > 0) without
// reading more than limit+1 of them: a reader that will check the size
// anyway (a pack bundle) is not made to hold a huge object first.
func (s *Store) GetLimit(ctx context.Context, key string, limit int64) ([]byte, error) {
	if limit > 0 {
		if err := checkKey(key); err != nil {
			return nil, fmt.Errorf("read %s: %w", s.name(key), err)
		}
		// The size first: an object known too large is refused unread.
		a, err := s.bucket.Attributes(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.name(key), err)
		}
		if a.Size > limit {
			return nil, fmt.Errorf("read %s: %d bytes: %w of %d bytes", s.name(key), a.Size, ErrTooLarge, limit)
		}
	}
	if s.root != nil {
		data, err := s.getFile(key, limit)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return data, err
		}
		// Missing: the bucket says so in its own terms (IsNotFound).
	}
	if limit <= 0 {
		b, err := s.bucket.ReadAll(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.name(key), err)
		}
		return b, nil
	}
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(key), err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(key), err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: %w of %d bytes", s.name(key), ErrTooLarge, limit)
	}
	return b, nil
}

// ErrTooLarge is GetLimit's refusal of an object over its limit.
var ErrTooLarge = errors.New("over the limit")

// Exists says whether key is there.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := checkKey(key); err != nil {
		return false, err
	}
	ok, err := s.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", s.name(key), err)
	}
	return ok, nil
}

// ObjectURL is key's URL without the store's query: the name a manifest
// records (endpoint and region are the reader's configuration, not the
// object's).
func (s *Store) ObjectURL(key string) string { return s.name(key) }

// Base is the store's root URL without its query.
func (s *Store) Base() string { return s.base }

// KeyOf is the key of an object URL inside this store. A URL of another
// scheme, bucket or directory, or outside the store's prefix, is refused
// naming both; so is one carrying a query, a user or a fragment, which a
// manifest has no business setting (the reader's store decides them).
func (s *Store) KeyOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("url %q: %w", raw, err)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("url %q: want scheme://bucket/key with no user, query or fragment", raw)
	}
	full := u.Scheme + "://" + u.Host + u.Path
	if u.Scheme == schemeFile && u.Host == "localhost" {
		full = u.Scheme + "://" + u.Path
	}
	key, ok := strings.CutPrefix(full, s.base+"/")
	if !ok {
		return "", fmt.Errorf("url %s is outside the store %s", full, s.base)
	}
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("url %s: %w", full, err)
	}
	if strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) >= 0 {
		// Escaped into the URL (%00): no object is named so, and the
		// name would not print or parse back.
		return "", fmt.Errorf("url %q: the key holds a control character or backslash", raw)
	}
	return key, nil
}

// getFile reads key from a file:// store through its root.
func (s *Store) getFile(key string, limit int64) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(key), err)
	}
	if strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		// fileblob stores such a key under an escaped name, which the
		// root would not find; no artifact is named so.
		return nil, fmt.Errorf("read %s: artifacts key %q: control characters", s.name(key), key)
	}
	data, err := s.root.ReadFile(filepath.FromSlash(key), limit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s: %w", s.name(key), err)
	}
	return data, nil
}

// IsNotFound says whether err is a missing object.
func IsNotFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// List returns every key under prefix (a folder: "" or ending in "/").
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.name(prefix), err)
		}
		if obj.IsDir {
			continue
		}
		keys = append(keys, obj.Key)
	}
}

// checkKey refuses keys that would leave the store's root in a file://
// store or name a folder.
func checkKey(key string) error {
	if key == "" || strings.HasSuffix(key, "/") || strings.HasPrefix(key, "/") {
		return fmt.Errorf("artifacts key %q: want a file name under the store's root", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("artifacts key %q: empty, . or .. segment", key)
		}
	}
	return nil
}

// Download copies every object under prefix into dir, each at its key with
// prefix cut (rename may change that path; nil keeps it). Files are written
// whole (temporary file, then rename). It returns how many were copied.
func (s *Store) Download(ctx context.Context, prefix, dir string, rename func(rel string) (string, bool)) (int, error) {
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		rel := strings.TrimPrefix(k, prefix)
		if rename != nil {
			var ok bool
			if rel, ok = rename(rel); !ok {
				continue
			}
		}
		if err := checkKey(rel); err != nil {
			return n, fmt.Errorf("download %s: %w", s.name(k), err)
		}
		data, err := s.Get(ctx, k)
		if err != nil {
			return n, err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path.Clean(rel)))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return n, fmt.Errorf("download %s: %w", s.name(k), err)
		}
		if err := artifacts.WriteFileAtomic(dst, data); err != nil {
			return n, fmt.Errorf("download %s: %w", s.name(k), err)
		}
		n++
	}
	return n, nil
}

// Sink is the store seen from prefix (a folder key without trailing
// slash): where one attempt's files go.
func (s *Store) Sink(prefix string) artifacts.Sink {
	return &sink{store: s, prefix: strings.Trim(prefix, "/")}
}

type sink struct {
	store  *Store
	prefix string
}

func (k *sink) key(name string) string {
	if k.prefix == "" {
		return name
	}
	return k.prefix + "/" + name
}

func (k *sink) Put(ctx context.Context, name string, data []byte) error {
	return k.store.Put(ctx, k.key(name), data)
}

func (k *sink) Delete(ctx context.Context, name string) error {
	return k.store.Delete(ctx, k.key(name))
}

func (k *sink) Location(name string) string { return k.store.Location(k.key(name)) }
