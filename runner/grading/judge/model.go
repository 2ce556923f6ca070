package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tolokaforge.io/operator/api/llm"

	"tolokaforge.io/operator/api/task"
)

// DefaultSecretsDir is where the runner pod mounts the judge's key files (the
// operator mounts the Trial's judge Secret there, read-only, with only that key).
const DefaultSecretsDir = "/var/run/tolokaforge/secrets"

// defaultTimeout bounds one trial's whole judge run (every call and every retry).
const defaultTimeout = 5 * time.Minute

// maxKeyFileBytes bounds a key file: a key is a few hundred bytes; anything much larger
// is a mis-mounted volume, not a key.
const maxKeyFileBytes = 16 << 10

// Usage is what one judge call consumed. Calls is 1 for a call the provider
// answered (however many refused tries preceded it: a retried call is billed once) and
// Retries counts the refused tries.
type Usage = llm.Usage

// Model is one chat model the judge calls: one billed provider round trip per
// Complete, retried on provider faults inside it. tools is nil when none are offered.
// The project's one OpenAI-compatible client (api/llm) satisfies it through an adapter;
// the interface keeps grading testable and free of the transport.
type Model interface {
	Complete(ctx context.Context, conv []task.Message, tools json.RawMessage) (content string, calls []task.ToolCall, usage Usage, err error)
}

// ModelFactory builds the judge's model from TrialSpec.judge and the key read from
// the secrets directory ("" when the config names no key file).
type ModelFactory func(cfg *task.ModelConfig, apiKey string) (Model, error)

// readJudgeKey resolves the judge's API key. The TrialSpec wire keeps the spec's
// api_key_env field, but the runner never reads provider keys from its environment:
// api_key_env names a file in the secrets directory (the key of the mounted Secret).
// An empty api_key_env means no key (local endpoints need none).
func readJudgeKey(dir string, cfg *task.ModelConfig) (string, error) {
	name := cfg.APIKeyEnv
	if name == "" {
		return "", nil
	}
	if err := checkKeyFileName(name); err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("judge.api_key_env names key file %q, but the runner has no secrets directory (--secrets-dir)", name)
	}
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("judge.api_key_env names key file %q, which is not in the secrets directory %s: mount the judge Secret's key %q there", name, dir, name)
		}
		return "", fmt.Errorf("open judge key file %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read judge key file %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		return "", fmt.Errorf("judge key file %s is larger than %d bytes: not an API key", path, maxKeyFileBytes)
	}
	// Secrets created with `echo` or a YAML block scalar end with a newline that would
	// otherwise be sent in the Authorization header.
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("judge key file %s is empty", path)
	}
	return key, nil
}

// checkKeyFileName keeps api_key_env a plain file name: it must never reach outside
// the secrets directory.
func checkKeyFileName(name string) error {
	if name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("judge.api_key_env %q must be a plain file name in the secrets directory (no path separators)", name)
	}
	return nil
}
