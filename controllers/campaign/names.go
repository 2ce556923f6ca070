package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// maxTrialNameLength keeps Trial names usable as label values (the Trial
// controller labels pods with the Trial's name) and as DNS-1123 labels.
const maxTrialNameLength = validation.DNS1123LabelMaxLength

// hashLen is the number of hex digits of the disambiguating hash.
const hashLen = 10

func shortHash(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:hashLen]
}

// TrialName is the deterministic name of a cell's Trial:
// "<campaign>-<agent>-<task>-<index>". A name longer than 63 characters keeps
// a prefix of it and gains a hash of (campaign, agent, task) before the
// index, so it stays unique and the index stays readable.
func TrialName(campaign, agent, taskName string, index int32) string {
	plain := campaign + "-" + agent + "-" + taskName + "-" + strconv.Itoa(int(index))
	if len(plain) <= maxTrialNameLength {
		return plain
	}
	return hashedTrialName(campaign, agent, taskName, index)
}

// hashedTrialName is TrialName's long form, also used when two cells'
// plain names collide ("a-b"+"c" and "a"+"b-c").
func hashedTrialName(campaign, agent, taskName string, index int32) string {
	suffix := "-" + shortHash(campaign, agent, taskName) + "-" + strconv.Itoa(int(index))
	prefix := campaign + "-" + agent + "-" + taskName
	if room := maxTrialNameLength - len(suffix); len(prefix) > room {
		prefix = prefix[:room]
	}
	prefix = strings.TrimRight(prefix, "-.")
	return prefix + suffix
}
