package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// trialPagesDir is the directory of trial pages beside a campaign page
// named <stem>.html: <stem>_trials/.
func trialPagesDir(htmlPath string) string {
	base := filepath.Base(htmlPath)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	return filepath.Join(filepath.Dir(htmlPath), stem+"_trials")
}

// WriteSite writes the campaign page at htmlPath and one static page per
// trial that has an artifacts directory into TrialPagesDir(htmlPath); the
// campaign page links every task x agent cell to its trials' pages, and
// each trial page links back. Everything a trial recorded is rendered by
// html/template, so a transcript cannot inject markup or script.
func (r *Report) WriteSite(htmlPath string) error {
	pagesDir := trialPagesDir(htmlPath)
	baseDir := filepath.Dir(htmlPath)
	campaignBase := filepath.Base(htmlPath)
	used := map[string]bool{}
	wrote := false
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Dir == "" {
			continue
		}
		if !wrote {
			if err := os.MkdirAll(pagesDir, 0o755); err != nil {
				return fmt.Errorf("trial pages: %w", err)
			}
			wrote = true
		}
		slug := pageSlug(*t)
		for n := 2; used[slug]; n++ {
			slug = pageSlug(*t) + "-" + strconv.Itoa(n)
		}
		used[slug] = true
		// Trial pages sit one directory below the campaign page.
		back, ok := relHref(campaignBase)
		if !ok {
			return fmt.Errorf("campaign page %s: no relative link to it", htmlPath)
		}
		back = "../" + back
		d, err := trialPage(*t, back, baseDir)
		if err != nil {
			return fmt.Errorf("trial page of %s: %w", t.Name, err)
		}
		var b bytes.Buffer
		if err := writeTrialPage(&b, d); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pagesDir, slug+".html"), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("trial page of %s: %w", t.Name, err)
		}
		page, ok := relHref(filepath.Base(pagesDir) + "/" + slug + ".html")
		if !ok {
			return fmt.Errorf("trial pages %s: no relative link to them", pagesDir)
		}
		t.Page = string(page)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b, baseDir); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	if err := os.WriteFile(htmlPath, b.Bytes(), 0o644); err != nil {
		return err
	}
	return nil
}

// pageSlug is a file name for a trial: agent, task and index with anything
// outside [A-Za-z0-9._-] replaced, so no trial name escapes the directory.
func pageSlug(t Trial) string {
	return slugPart(t.Agent) + "__" + slugPart(t.Task) + "__" + strconv.Itoa(t.Index)
}

func slugPart(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
