package task

import (
	"bytes"
	"encoding/json"
)

// DecodeTrialSpec decodes RegisterTrialRequest.trial_spec_json strictly, applies
// the spec's defaults and validates it. Errors are *DecodeError with paths
// rooted at the spec ("task.grading.combine_method").
func DecodeTrialSpec(data []byte) (*TrialSpec, error) {
	var s TrialSpec
	if err := DecodeStrict(data, &s); err != nil {
		return nil, err
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// DecodeTaskDescription decodes one TaskDescription document strictly, applies
// defaults and validates it; paths are rooted at the task ("agent_tools[0]").
func DecodeTaskDescription(data []byte) (*TaskDescription, error) {
	var t TaskDescription
	if err := DecodeStrict(data, &t); err != nil {
		return nil, err
	}
	t.ApplyDefaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// DecodeGradingConfig decodes a TaskDescription.grading block on its own;
// paths are rooted at the block ("state_checks.hash_weight").
func DecodeGradingConfig(data []byte) (*GradingConfig, error) {
	var g GradingConfig
	if err := DecodeStrict(data, &g); err != nil {
		return nil, err
	}
	g.ApplyDefaults()
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return &g, nil
}

// Encode marshals a wire value compactly without HTML escaping, so text such as
// "<" in a prompt or a table crosses verbatim, and decoding the output yields the
// same value again (RawMessage content is already compact after decoding).
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
