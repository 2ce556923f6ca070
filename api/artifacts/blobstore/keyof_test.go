package blobstore_test

import (
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
