package dbservice

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"tolokaforge.io/operator/dbservice/client"
)

// A request refused before its body is read is answered at once and its connection
// closed, however slowly the client sends the body (or if it never finishes it). Before,
// net/http waited for up to 256 KiB of the body first: ~70 s for a stalled client.
func TestRefusedRequestIsAnsweredAtOnceAndClosed(t *testing.T) {
	_, base := startServer(t, Options{AuthToken: testToken})
	addr := strings.TrimPrefix(base, "http://")
	if _, err := client.New(base, client.WithToken(testToken)).Init(context.Background(), "t1",
		client.InitRequest{Tables: tablesOf(t, `{"orders":[{"id":1}]}`)}); err != nil {
		t.Fatal(err)
	}
	auth := "Authorization: Bearer " + testToken + "\r\n"
	cases := []struct {
		name, head, sent string
		status           int
		errType          string
	}{
		{"no credential, Content-Length not finished", "POST /trials/t1/init HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n",
			`{"tables":`, 401, errTypeUnauthenticated},
		{"wrong credential, chunked body not finished", "PATCH /trials/t1/state/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nTransfer-Encoding: chunked\r\n\r\n",
			"5\r\n{\"ope\r\n", 401, errTypeUnauthenticated},
		{"no credential, nothing of the body sent", "POST /trials/t2/init HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n",
			"", 401, errTypeUnauthenticated},
		{"bad trial id", "POST /trials/bad%20id/init HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 100000\r\n\r\n",
			`{"tables":`, 400, errTypeInvalidTrialID},
		{"bad table name", "PATCH /trials/t1/state/..%2F..%2Fx HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 100000\r\n\r\n",
			`{"operations":`, 400, errTypeValidation},
		{"unknown endpoint", "POST /trials/t1/nothing HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 100000\r\n\r\n",
			`{`, 404, errTypeNotFound},
		{"declared body over the limit", "POST /trials/t3/init HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 999999999999\r\n\r\n",
			`{`, 413, errTypePayloadTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, tc.head+tc.sent); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer after %s: %v", time.Since(start), err)
			}
			var body struct{ Error, Message string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			answered := time.Since(start)
			if answered > time.Second {
				t.Errorf("answered after %s, want under 1s", answered)
			}
			if resp.StatusCode != tc.status || body.Error != tc.errType {
				t.Errorf("got %d %s %q, want %d %s", resp.StatusCode, body.Error, body.Message, tc.status, tc.errType)
			}
			if !resp.Close {
				t.Errorf("the answer lacks Connection: close")
			}
			// The server ends the connection: the client reads EOF, not a wait.
			if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Errorf("after the answer: read %d, %v; want EOF", n, err)
			}
			if closed := time.Since(start); closed > time.Second {
				t.Errorf("connection closed after %s, want under 1s", closed)
			}
		})
	}
}

// The same through net/http's client, whose body trickles in a byte every 50 ms.
func TestRefusedSlowBodyWithHTTPClient(t *testing.T) {
	_, base := startServer(t, Options{AuthToken: testToken})
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer pw.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := pw.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	req, err := http.NewRequest(http.MethodPost, base+"/trials/t1/init", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 1 << 20
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != http.StatusUnauthorized || d > time.Second {
		t.Fatalf("got %d after %s, want 401 within 1s", resp.StatusCode, d)
	}
}

// A handler that succeeds without reading the body it was sent answers at once too.
func TestUnreadBodyOnSuccessDoesNotDelayTheAnswer(t *testing.T) {
	_, base := startServer(t, Options{})
	if _, err := client.New(base).Init(context.Background(), "t1", client.InitRequest{Tables: tablesOf(t, `{"orders":[]}`)}); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST /trials/t1/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode != http.StatusOK || d > time.Second || !resp.Close {
		t.Fatalf("got %d after %s (close %v), want 200 within 1s with Connection: close", resp.StatusCode, d, resp.Close)
	}
}
