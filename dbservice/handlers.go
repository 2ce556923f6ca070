package dbservice

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"time"

	"tolokaforge.io/operator/api/canonical"
)

// hashes returns st's hashes, timing the work when it was not memoized.
func (s *Server) hashes(t *trial, st *dbState) (full, stable string) {
	start := time.Now()
	full, stable, computed := st.hashes(t.stableIsFull(st))
	if computed {
		s.metrics.hashTime.Observe(time.Since(start).Seconds())
	}
	return full, stable
}

func (s *Server) stableHash(t *trial, st *dbState) string {
	start := time.Now()
	h, computed := st.stable(t.stableIsFull(st))
	if computed {
		s.metrics.hashTime.Observe(time.Since(start).Seconds())
	}
	return h
}

func (s *Server) handleInit(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	body, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	req, e := decodeInit(body, &s.limits)
	if e != nil {
		return e
	}
	t, e := newTrial(id, req)
	if e != nil {
		return e
	}
	if e := checkTrialLimits(t.current, &s.limits); e != nil {
		return e
	}
	full, stable, _ := t.current.hashes(t.stableIsFull(t.current))
	// Once published, t belongs to its lock: a DELETE may clear it at once, so the
	// response is built from values read before add.
	names, nSchemas, nUnstable := t.current.names, len(t.schemas), len(t.unstable)
	if e := s.store.add(t); e != nil {
		return e
	}
	s.log.Info("trial initialized", "trial", id, "tables", len(names))
	writeJSON(w, http.StatusCreated, newJSONObject().
		str("status", "ok").
		str("trial_id", id).
		int("version", 1).
		str("stable_hash", stable).
		str("full_hash", full).
		str("initial_hash", stable).
		strs("tables_initialized", names).
		int("schemas_registered", int64(nSchemas)).
		int("unstable_fields_registered", int64(nUnstable)).
		bytes())
	return nil
}

// tablesParam reads ?tables=a,b (repeatable); nil means every table. A name that no
// table could have is refused rather than reported missing.
func tablesParam(r *http.Request) ([]string, *Error) {
	var names []string
	for _, v := range r.URL.Query()["tables"] {
		for n := range strings.SplitSeq(v, ",") {
			if n == "" || slices.Contains(names, n) {
				continue
			}
			if e := checkName("table", "?tables", n); e != nil {
				return nil, e
			}
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) *Error {
	return s.serveState(w, r, false)
}

func (s *Server) handleStableState(w http.ResponseWriter, r *http.Request) *Error {
	return s.serveState(w, r, true)
}

func (s *Server) serveState(w http.ResponseWriter, r *http.Request, stable bool) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	names, e := tablesParam(r)
	if e != nil {
		return e
	}
	var (
		st             *dbState
		version        int64
		fullH, stableH string
		filtered       []unstableField
	)
	e = s.store.with(id, func(t *trial) *Error {
		st, version = t.current, t.version
		for _, n := range names {
			if _, ok := st.tables[n]; !ok {
				return errTableNotFound(id, n)
			}
		}
		if stable {
			stableH = s.stableHash(t, st)
			filtered = t.filteredFields(st)
		} else {
			fullH, stableH = s.hashes(t, st)
		}
		return nil
	})
	if e != nil {
		return e
	}
	if names == nil {
		names = st.names
	}
	// The state is immutable, so it streams without holding the trial's lock.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.WriteString(`{"data":`)
	_ = st.writeData(bw, names, stable)
	tail := newJSONObject().int("version", version)
	if !stable {
		tail.str("full_hash", fullH)
	}
	tail.str("stable_hash", stableH)
	if stable {
		ff := canonical.Array{}
		for _, f := range filtered {
			ff = append(ff, canonical.NewObject(
				canonical.Member{Key: "table", Value: canonical.String(f.Table)},
				canonical.Member{Key: "field", Value: canonical.String(f.Field)}))
		}
		tail.raw("filtered_fields", canonical.Marshal(ff))
	}
	// tail is "{...}"; splice its members after data.
	_ = bw.WriteByte(',')
	_, _ = bw.Write(tail.bytes()[1:])
	if err := bw.Flush(); err != nil {
		s.log.V(1).Info("client went away while streaming state", "trial", id, "err", err.Error())
	}
	return nil
}

func (s *Server) handleHash(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	var body []byte
	e = s.store.with(id, func(t *trial) *Error {
		full, stable := s.hashes(t, t.current)
		body = newJSONObject().str("stable_hash", stable).str("full_hash", full).int("version", t.version).bytes()
		return nil
	})
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	tableName, e := tableName(r)
	if e != nil {
		return e
	}
	body, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	req, e := decodePatch(body, &s.limits)
	if e != nil {
		return e
	}
	var version int64
	var affected int
	e = s.store.with(id, func(t *trial) *Error {
		if req.ifVersion != nil && *req.ifVersion != t.version {
			return newError(http.StatusConflict, errTypeVersionMismatch,
				map[string]any{"trial_id": id, "expected_version": *req.ifVersion, "current_version": t.version},
				"if_version %d does not match the current version %d", *req.ifVersion, t.version)
		}
		if req.etag != "" {
			if full, _ := s.hashes(t, t.current); full != req.etag {
				return newError(http.StatusConflict, errTypeVersionMismatch,
					map[string]any{"trial_id": id, "etag": req.etag, "current_etag": full},
					"etag %q does not match the current full hash %q", req.etag, full)
			}
		}
		n, e := t.patch(tableName, req.ops, &s.limits, s.store)
		if e != nil {
			return e
		}
		version, affected = t.version, n
		return nil
	})
	if e != nil {
		return e
	}
	for _, op := range req.ops {
		s.metrics.ops.WithLabelValues(op.op).Inc()
	}
	writeJSON(w, http.StatusOK, newJSONObject().
		str("status", "ok").int("version", version).int("affected_rows", int64(affected)).bytes())
	return nil
}

func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	name, e := snapshotName(r)
	if e != nil {
		return e
	}
	var body []byte
	replaced := false
	e = s.store.with(id, func(t *trial) *Error {
		if _, exists := t.snapshots[name]; !exists && len(t.snapshots) >= s.limits.MaxSnapshotsPerTrial {
			return errLimit(http.StatusUnprocessableEntity, errTypeLimitExceeded, "max_snapshots_per_trial",
				int64(s.limits.MaxSnapshotsPerTrial), int64(len(t.snapshots)+1),
				"trial %q already holds %d snapshots; delete one or reuse its name", id, len(t.snapshots))
		}
		replaced = t.takeSnapshot(name)
		t.settle(s.store)
		h := s.stableHash(t, t.current)
		body = newJSONObject().str("status", "ok").str("snapshot_name", name).int("version", t.version).
			str("stable_hash", h).str("hash", h).bool("replaced", replaced).bytes()
		return nil
	})
	if e != nil {
		return e
	}
	status := http.StatusCreated
	if replaced {
		status = http.StatusOK
	}
	writeJSON(w, status, body)
	return nil
}

func (s *Server) handleRestore(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	name, e := snapshotName(r)
	if e != nil {
		return e
	}
	var body []byte
	e = s.store.with(id, func(t *trial) *Error {
		snap, e := t.restore(name)
		if e != nil {
			return e
		}
		t.settle(s.store)
		h := s.stableHash(t, t.current)
		body = newJSONObject().str("status", "ok").str("restored_from", name).int("version", t.version).
			int("snapshot_version", snap.version).str("stable_hash", h).str("hash", h).bytes()
		return nil
	})
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) handleDeleteSnapshot(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	name, e := snapshotName(r)
	if e != nil {
		return e
	}
	e = s.store.with(id, func(t *trial) *Error {
		if !t.deleteSnapshot(name) {
			return errSnapshotNotFound(id, name)
		}
		t.settle(s.store)
		return nil
	})
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, newJSONObject().str("status", "ok").str("deleted", name).bytes())
	return nil
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	var body []byte
	e = s.store.with(id, func(t *trial) *Error {
		t.reset()
		t.settle(s.store)
		h := s.stableHash(t, t.current)
		body = newJSONObject().str("status", "ok").int("version", t.version).str("stable_hash", h).str("hash", h).bytes()
		return nil
	})
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	snaps, e := s.store.remove(id)
	if e != nil {
		return e
	}
	s.log.Info("trial deleted", "trial", id)
	deleted := newJSONObject().bool("state", true).bool("schemas", true).bool("unstable_fields", true).
		int("snapshots", int64(snaps)).bytes()
	writeJSON(w, http.StatusOK, newJSONObject().str("status", "ok").raw("deleted", deleted).bytes())
	return nil
}

func (s *Server) handleSchema(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	var body []byte
	e = s.store.with(id, func(t *trial) *Error {
		schemas := make([]canonical.Member, 0, len(t.schemas))
		for _, sc := range t.schemas {
			var pk canonical.Value = canonical.Null{}
			if sc.PrimaryKey != "" {
				pk = canonical.String(sc.PrimaryKey)
			}
			schemas = append(schemas, canonical.Member{Key: sc.Name, Value: canonical.NewObject(
				canonical.Member{Key: "fields", Value: sc.Fields},
				canonical.Member{Key: "primary_key", Value: pk})})
		}
		unstable := make(canonical.Array, 0, len(t.unstable))
		for _, uf := range t.unstable {
			unstable = append(unstable, canonical.NewObject(
				canonical.Member{Key: "table_name", Value: canonical.String(uf.Table)},
				canonical.Member{Key: "field_name", Value: canonical.String(uf.Field)},
				canonical.Member{Key: "reason", Value: canonical.String(uf.Reason)}))
		}
		body = newJSONObject().raw("schemas", canonical.Marshal(canonical.NewObject(schemas...))).
			raw("unstable_fields", canonical.Marshal(unstable)).bytes()
		return nil
	})
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) *Error {
	writeJSON(w, http.StatusOK, newJSONObject().str("status", "healthy").str("version", serviceVersion).
		int("active_trials", int64(s.store.count())).bytes())
	return nil
}
