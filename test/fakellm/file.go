package fakellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// scriptFile is the on-disk script (JSON or YAML):
//
//	replies:            # shared queue, for models without their own
//	  - content: "Hello"
//	    usage: {prompt_tokens: 12, completion_tokens: 3, reasoning_tokens: 1}
//	  - status: 429
//	    retry_after: "1"
//	models:
//	  agent-model:
//	    - tool_calls: [{id: call_1, name: get_stock, arguments: '{"sku":"A1"}'}]
//	      delay: 50ms
//	    - content: done
type scriptFile struct {
	Replies []Reply            `json:"replies,omitempty"`
	Models  map[string][]Reply `json:"models,omitempty"`
}

// parseScript decodes a script file. Unknown fields and invalid replies are
// errors that name the offending entry.
func parseScript(data []byte) (scriptFile, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return scriptFile{}, fmt.Errorf("script is not valid YAML or JSON: %w", err)
	}
	var sf scriptFile
	if err := decodeStrict(js, &sf); err != nil {
		return scriptFile{}, fmt.Errorf("decode script: %w", err)
	}
	for i, r := range sf.Replies {
		if err := r.validate(fmt.Sprintf("replies[%d]", i)); err != nil {
			return scriptFile{}, err
		}
	}
	models := make([]string, 0, len(sf.Models))
	for m := range sf.Models {
		models = append(models, m)
	}
	sort.Strings(models) // report the first problem deterministically
	for _, m := range models {
		if m == "" {
			return scriptFile{}, errors.New("models: empty model name")
		}
		for i, r := range sf.Models[m] {
			if err := r.validate(fmt.Sprintf("models.%s[%d]", m, i)); err != nil {
				return scriptFile{}, err
			}
		}
	}
	return sf, nil
}

// LoadScript reads and parses a script file.
func LoadScript(path string) (scriptFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return scriptFile{}, fmt.Errorf("read script: %w", err)
	}
	sf, err := parseScript(data)
	if err != nil {
		return scriptFile{}, fmt.Errorf("script %s: %w", path, err)
	}
	return sf, nil
}

// Config returns a server configuration replaying the file.
func (sf scriptFile) Config() Config {
	return Config{Script: sf.Replies, Scripts: sf.Models}
}

// Serve serves cfg on listen until ctx is done and prints the base URL on
// stdout once listening: the body of cmd/fakellm, which parses the command
// line into cfg.
func Serve(ctx context.Context, cfg Config, listen string, stdout io.Writer) error {
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(listen); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "fakellm listening on %s\n", srv.URL())
	<-ctx.Done()
	return srv.Close()
}
