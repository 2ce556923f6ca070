package blobstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tolokaforge.io/operator/api/artifacts/blobstore"
)

// KeyOf maps a manifest's object URL into the reader's store and refuses
// anything elsewhere, naming the URL and the store.
func TestKeyOf(t *testing.T) {
	for name, s := range stores(t) {
		base := s.Base()
		cases := []struct {
			url, key, err string
		}{
			{url: base + "/packs/sha256/ab.tar", key: "packs/sha256/ab.tar"},
			{url: s.ObjectURL("packs/x.tar"), key: "packs/x.tar"},
			{url: base + "-other/packs/x.tar", err: "is outside the store " + base},
			{url: base, err: "is outside the store"},
			{url: "s3://elsewhere/campaigns/c1/packs/x.tar", err: "url s3://elsewhere/campaigns/c1/packs/x.tar is outside the store " + base},
			{url: "gs://results/campaigns/c1/x.tar", err: "is outside the store"},
			{url: base + "/packs/x.tar?endpoint=http://evil", err: "no user, query or fragment"},
			{url: base + "/packs/../../x.tar", err: "empty, . or .. segment"},
			{url: base + "/packs/", err: "want a file name"},
			{url: base + "/packs/%00.tar", err: "the key holds a control character or backslash"},
		}
		for _, c := range cases {
			key, err := s.KeyOf(c.url)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s: KeyOf(%q) = %q, %v; want error containing %q", name, c.url, key, err, c.err)
				}
				continue
			}
			if err != nil || key != c.key {
				t.Errorf("%s: KeyOf(%q) = %q, %v; want %q", name, c.url, key, err, c.key)
			}
		}
	}
}

func TestGetLimitAndExists(t *testing.T) {
	for name, s := range stores(t) {
		ctx := ctxT(t)
		if ok, err := s.Exists(ctx, "packs/a.tar"); err != nil || ok {
			t.Fatalf("%s: Exists before Put = %v, %v; want false", name, ok, err)
		}
		if err := s.Put(ctx, "packs/a.tar", []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Exists(ctx, "packs/a.tar"); err != nil || !ok {
			t.Fatalf("%s: Exists after Put = %v, %v; want true", name, ok, err)
		}
		if b, err := s.GetLimit(ctx, "packs/a.tar", 10); err != nil || string(b) != "0123456789" {
			t.Errorf("%s: GetLimit(10) = %q, %v", name, b, err)
		}
		if _, err := s.GetLimit(ctx, "packs/a.tar", 9); !errors.Is(err, blobstore.ErrTooLarge) || !strings.Contains(err.Error(), "10 bytes: over the limit of 9 bytes") {
			t.Errorf("%s: GetLimit(9) error %v; want over the limit of 9 bytes", name, err)
		}
		if _, err := s.GetLimit(ctx, "packs/missing.tar", 9); !blobstore.IsNotFound(err) {
			t.Errorf("%s: GetLimit(missing) error %v; want not found", name, err)
		}
	}
}

// FuzzKeyOf: whatever URL a Task names, KeyOf either refuses it or returns
// a key inside the store whose own URL is the one given (no ".." or empty
// segment, no second meaning): a Task never makes the manager read outside
// its store.
func FuzzKeyOf(f *testing.F) {
	for _, seed := range []string{
		"s3://results/campaigns/c1/packs/sha256/ab.tar", "s3://results/campaigns/c1/../x", "s3://results/campaigns/c1x/a",
		"s3://results/campaigns/c1/a?x=1", "s3://u:p@results/campaigns/c1/a", "s3://results/campaigns/c1/a%2F..%2Fb",
		"s3://results/campaigns/c1//a", "gs://results/campaigns/c1/a", "s3://results/campaigns/c1/a#f", "%zz", "",
	} {
		f.Add(seed)
	}
	s, err := blobstore.Open(context.Background(), "s3://results/campaigns/c1?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true")
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := s.KeyOf(raw)
		if err != nil {
			return
		}
		for _, seg := range strings.Split(key, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("KeyOf(%q) = %q: a segment %q", raw, key, seg)
			}
		}
		if again, err := s.KeyOf(s.ObjectURL(key)); err != nil || again != key {
			t.Fatalf("KeyOf(%q) = %q, but KeyOf(ObjectURL) = %q, %v", raw, key, again, err)
		}
		if !strings.HasPrefix(s.ObjectURL(key), "s3://results/campaigns/c1/") {
			t.Fatalf("KeyOf(%q) = %q outside the store", raw, key)
		}
	})
}
