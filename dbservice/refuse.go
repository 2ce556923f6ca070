package dbservice

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"
)

// How a refused request's connection ends: the answer is written (refusalWriteTimeout
// bounds a client that does not read it), the write side is shut at once so the client
// sees the end of the answer and EOF, and then at most refusalDrainBytes of what the
// client still sends are read for at most refusalDrainTime before the socket closes.
// The short drain is net/http's own rstAvoidanceDelay: closing a socket with unread
// input sends a TCP reset, which can make the client's kernel drop the answer before
// the client has read it.
const (
	refusalWriteTimeout = time.Second
	refusalDrainTime    = 500 * time.Millisecond
	refusalDrainBytes   = 64 << 10
)

// trackedBody notes whether a request's body was read to its end.
type trackedBody struct {
	io.ReadCloser
	eof bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// bodyPending reports whether r came with a body that has not been read to its end.
func bodyPending(r *http.Request) bool {
	b, ok := r.Body.(*trackedBody)
	return ok && !b.eof
}

// refuseAndClose answers e on a request whose body was not read (refused before its
// handler read it: no credential, a bad trial id or name, an unknown endpoint, a body
// over the limit or too slow) and closes the connection. Left to net/http, the answer
// would wait until up to 256 KiB of the body had arrived, for as long as the server's
// ReadTimeout (70 s by default) if the client sends slowly or never finishes a declared
// Content-Length; and a kept-alive connection would then read the rest of a body nobody
// wants. Where the connection cannot be taken over (HTTP/2, a test recorder) the answer
// goes out with Connection: close.
func refuseAndClose(w *statusWriter, r *http.Request, e *Error) {
	w.status = e.Status
	conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		w.Header().Set("Connection", "close")
		w.closing = true
		writeError(w.ResponseWriter, e)
		return
	}
	defer conn.Close()
	body := errorBody(e)
	h := w.Header().Clone()
	h.Set("Content-Type", "application/json")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	resp := &http.Response{
		StatusCode: e.Status, ProtoMajor: 1, ProtoMinor: 1, Request: r, Header: h, Close: true,
		ContentLength: int64(len(body)), Body: io.NopCloser(bytes.NewReader(body)),
	}
	_ = conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
	if err := resp.Write(conn); err != nil {
		return
	}
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = conn.SetReadDeadline(time.Now().Add(refusalDrainTime))
	_, _ = io.CopyN(io.Discard, conn, refusalDrainBytes)
}
