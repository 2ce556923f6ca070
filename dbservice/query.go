package dbservice

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

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
	req, e := decodeQuery(body, &s.limits)
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
	// Selected nodes share the tree, but each serializes in full: $..* over a few MiB
	// writes hundreds of MiB. The encoder stops at the cap instead of building it first.
	enc := cappedEncoder{max: s.limits.MaxQueryResponseBytes}
	enc.buf = append(enc.buf, `{"results":[`...)
	for i, n := range nodes {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		if err := enc.value(n); err != nil {
			if errors.Is(err, errCapReached) {
				return errLimit(http.StatusUnprocessableEntity, errTypeLimitExceeded, "max_query_response_bytes",
					s.limits.MaxQueryResponseBytes, -1,
					"the results of %q (%d nodes) exceed the response size limit after %d of them; narrow the JSONPath",
					req.jsonpath, len(nodes), i)
			}
			return newError(http.StatusInternalServerError, errTypeInternal, nil, "query result: %v", err)
		}
	}
	enc.buf = append(enc.buf, `],"count":`...)
	enc.buf = strconv.AppendInt(enc.buf, int64(len(nodes)), 10)
	enc.buf = append(enc.buf, '}')
	writeJSON(w, http.StatusOK, enc.buf)
	return nil
}

var errCapReached = errors.New("response size limit reached")

// cappedEncoder writes the plain Go values canonical.ToAny produces in canonical form,
// failing with errCapReached as soon as the output passes max bytes.
type cappedEncoder struct {
	buf  []byte
	max  int64
	keys []string
}

func (e *cappedEncoder) value(x any) error {
	if int64(len(e.buf)) > e.max {
		return errCapReached
	}
	switch v := x.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case string:
		e.buf = canonical.AppendString(e.buf, v)
	case json.Number:
		// ToAny stores numbers as their canonical literal.
		e.buf = append(e.buf, v...)
	case []any:
		e.buf = append(e.buf, '[')
		for i, el := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case map[string]any:
		// Canonical order is code-point order, which is byte order of UTF-8.
		start := len(e.keys)
		for k := range v {
			e.keys = append(e.keys, k)
		}
		keys := e.keys[start:]
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = canonical.AppendString(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.value(v[k]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
		e.keys = e.keys[:start]
	default:
		return errors.New("unexpected node type in query result")
	}
	if int64(len(e.buf)) > e.max {
		return errCapReached
	}
	return nil
}
