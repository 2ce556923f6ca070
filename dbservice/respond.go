package dbservice

import (
	"net/http"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
)

// jsonObject builds a response object by hand: responses embed canonical bytes that
// encoding/json would re-validate and re-escape, and the metadata around them is small.
type jsonObject struct {
	b []byte
	n int
}

func newJSONObject() *jsonObject { return &jsonObject{b: append(make([]byte, 0, 256), '{')} }

func (o *jsonObject) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = canonical.AppendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) *jsonObject {
	o.key(k)
	o.b = canonical.AppendString(o.b, v)
	return o
}

func (o *jsonObject) int(k string, v int64) *jsonObject {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
	return o
}

func (o *jsonObject) bool(k string, v bool) *jsonObject {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
	return o
}

// raw adds v, which must already be valid JSON.
func (o *jsonObject) raw(k string, v []byte) *jsonObject {
	o.key(k)
	o.b = append(o.b, v...)
	return o
}

func (o *jsonObject) strs(k string, vs []string) *jsonObject {
	o.key(k)
	o.b = append(o.b, '[')
	for i, v := range vs {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = canonical.AppendString(o.b, v)
	}
	o.b = append(o.b, ']')
	return o
}

func (o *jsonObject) bytes() []byte { return append(o.b, '}') }

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func errorBody(e *Error) []byte {
	details := []byte("{}")
	if len(e.Details) > 0 {
		anyDetails := make(map[string]any, len(e.Details))
		for k, v := range e.Details {
			anyDetails[k] = v
		}
		if v, err := canonical.FromAny(anyDetails); err == nil {
			details = canonical.Marshal(v)
		}
	}
	return newJSONObject().str("error", e.Type).str("message", e.Message).raw("details", details).bytes()
}

func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, errorBody(e))
}
