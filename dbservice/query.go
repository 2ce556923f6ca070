package dbservice

import (
	"net/http"

	"github.com/theory/jsonpath"

	"tolokaforge.io/operator/api/canonical"
)

// handleQuery evaluates an RFC 9535 JSONPath over {"db": {table: [records]}}, the root
// grading's probes address ($.db.orders[?@.status == 'paid']). With "stable": true the
// records are shown without their unstable fields.
func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) *Error {
	id, e := trialID(r)
	if e != nil {
		return e
	}
	body, e := s.readBody(w, r)
	if e != nil {
		return e
	}
	req, e := decodeQuery(body)
	if e != nil {
		return e
	}
	path, err := jsonpath.Parse(req.jsonpath)
	if err != nil {
		return errValidation("$.jsonpath", "invalid JSONPath %q: %v", req.jsonpath, err)
	}
	var (
		st       *dbState
		unstable func(string) []string
	)
	e = s.store.with(id, func(t *trial) *Error {
		st, unstable = t.current, t.unstableFor
		return nil
	})
	if e != nil {
		return e
	}
	// st is immutable and the unstable-field map never changes after init, so the tree
	// is built without holding the trial's lock.
	root := canonical.NewObject(canonical.Member{Key: "db", Value: st.value(req.stable, unstable)})
	nodes := path.Select(canonical.ToAny(root))
	results := make(canonical.Array, 0, len(nodes))
	for _, n := range nodes {
		v, err := canonical.FromAny(n)
		if err != nil {
			return newError(http.StatusInternalServerError, ErrTypeInternal, nil, "query result: %v", err)
		}
		results = append(results, v)
	}
	writeJSON(w, http.StatusOK, newJSONObject().raw("results", canonical.Marshal(results)).
		int("count", int64(len(results))).bytes())
	return nil
}
