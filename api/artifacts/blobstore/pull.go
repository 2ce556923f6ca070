package blobstore

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Mirror copies everything under the store rawURL names into dir, each
// object at its key: the manager's layout
// (<ns>/<trial>/attempt-<n>/trials/...) that `report --artifacts` reads.
func Mirror(ctx context.Context, rawURL, dir string) (int, error) {
	s, err := Open(ctx, rawURL)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	n, err := s.Download(ctx, "", dir, nil)
	if err != nil {
		return n, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no objects there", s.name(""))
	}
	return n, nil
}

var attemptKey = regexp.MustCompile(`^attempt-([0-9]+)/(trials/[^/]+/[0-9]+/.+)$`)

// PullTrial copies one Trial's artifacts (the folder status.artifactsURL
// names: attempt-<n>/trials/<task_id>/<index>/...) into dir as one local
// trial: the latest attempt's files on top and every attempt's own copy
// under attempts/<n>/, as `trial run` lays out a trial. It returns how many
// files it wrote.
func PullTrial(ctx context.Context, trialURL, dir string) (int, error) {
	s, err := Open(ctx, trialURL)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	keys, err := s.List(ctx, "")
	if err != nil {
		return 0, err
	}
	latest := 0
	for _, k := range keys {
		if m := attemptKey.FindStringSubmatch(k); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > latest {
				latest = n
			}
		}
	}
	if latest == 0 {
		return 0, fmt.Errorf("%s: no attempt-<n>/trials/<task_id>/<index>/ objects there", s.name(""))
	}
	return s.Download(ctx, "", dir, func(key string) (string, bool) {
		m := attemptKey.FindStringSubmatch(key)
		if m == nil {
			return "", false
		}
		n, _ := strconv.Atoi(m[1])
		rest := m[2]
		if n == latest {
			return rest, true
		}
		// An earlier attempt contributes only its own history copy; its
		// top-level files were superseded by the latest attempt's.
		parts := strings.SplitN(rest, "/", 5) // trials, task, index, attempts, ...
		if len(parts) == 5 && parts[3] == "attempts" {
			return rest, true
		}
		return "", false
	})
}
