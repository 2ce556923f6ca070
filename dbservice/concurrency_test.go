package dbservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"tolokaforge.io/operator/dbservice/client"
)

type appliedPatch struct {
	version int64
	table   string
	ops     []client.Operation
}

// 100 trials driven in parallel, several clients per trial: every applied PATCH gets a
// distinct version, each client sees its versions strictly increase, no increment is
// lost under compare-and-set, and replaying the applied requests in version order on a
// fresh trial reproduces the final state exactly.
func TestParallelTrialsLoseNoUpdate(t *testing.T) {
	const (
		trials  = 100
		workers = 3
		rounds  = 3
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, base := startServer(t, Options{})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: trials * workers}}
	c := client.New(base, client.WithHTTPClient(hc))
	initReq := client.InitRequest{
		Tables:  tablesOf(t, `{"counter":[{"id":"c","n":0}],"log":[]}`),
		Schemas: []client.TableSchema{{TableName: "log", PrimaryKey: "id"}},
	}
	var (
		mu      sync.Mutex
		applied = map[string][]appliedPatch{}
	)
	record := func(trial string, p appliedPatch) {
		mu.Lock()
		defer mu.Unlock()
		applied[trial] = append(applied[trial], p)
	}
	var wg sync.WaitGroup
	errc := make(chan error, trials*workers)
	for i := range trials {
		id := fmt.Sprintf("par-%03d", i)
		if _, err := c.Init(ctx, id, initReq); err != nil {
			t.Fatal(err)
		}
		for w := range workers {
			wg.Go(func() {
				last := int64(0)
				check := func(v int64) error {
					if v <= last {
						return fmt.Errorf("%s worker %d: version %d after %d", id, w, v, last)
					}
					last = v
					return nil
				}
				for r := range rounds {
					// Compare-and-set increment, retried on conflict.
					for {
						st, err := c.State(ctx, id, []string{"counter"})
						if err != nil {
							errc <- err
							return
						}
						var rows []struct{ N int }
						if err := json.Unmarshal(st.Data["counter"], &rows); err != nil {
							errc <- err
							return
						}
						ops := []client.Operation{client.Update(json.RawMessage(`{"id":"c"}`), json.RawMessage(fmt.Sprintf(`{"n":%d}`, rows[0].N+1)))}
						p, err := c.Patch(ctx, id, "counter", client.PatchRequest{Operations: ops, IfVersion: &st.Version})
						if errors.Is(err, client.ErrVersionMismatch) {
							continue
						}
						if err != nil {
							errc <- err
							return
						}
						if err := check(p.Version); err != nil {
							errc <- err
							return
						}
						record(id, appliedPatch{p.Version, "counter", ops})
						break
					}
					ops := []client.Operation{client.Insert(json.RawMessage(fmt.Sprintf(`{"id":"w%d-r%d","amount":1.50}`, w, r)))}
					p, err := c.Patch(ctx, id, "log", client.PatchRequest{Operations: ops})
					if err != nil {
						errc <- err
						return
					}
					if err := check(p.Version); err != nil {
						errc <- err
						return
					}
					record(id, appliedPatch{p.Version, "log", ops})
				}
			})
		}
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for i := range trials {
		id := fmt.Sprintf("par-%03d", i)
		patches := applied[id]
		sort.Slice(patches, func(a, b int) bool { return patches[a].version < patches[b].version })
		for k, p := range patches {
			if p.version != int64(k+2) {
				t.Fatalf("%s: applied versions are not 2..%d without gaps or repeats: %d at %d", id, len(patches)+1, p.version, k)
			}
		}
		final, err := c.State(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if final.Version != int64(len(patches)+1) {
			t.Fatalf("%s: final version %d after %d patches", id, final.Version, len(patches))
		}
		want := fmt.Sprintf(`[{"id":"c","n":%d}]`, workers*rounds)
		if string(final.Data["counter"]) != want {
			t.Fatalf("%s: counter %s, want %s (lost update)", id, final.Data["counter"], want)
		}
		var logRows []json.RawMessage
		if err := json.Unmarshal(final.Data["log"], &logRows); err != nil || len(logRows) != workers*rounds {
			t.Fatalf("%s: log has %d rows, want %d (%v)", id, len(logRows), workers*rounds, err)
		}
		replay := "replay-" + id
		if _, err := c.Init(ctx, replay, initReq); err != nil {
			t.Fatal(err)
		}
		for _, p := range patches {
			if _, err := c.Patch(ctx, replay, p.table, client.PatchRequest{Operations: p.ops}); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := c.State(ctx, replay, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rs.FullHash != final.FullHash || rs.Version != final.Version || !slices.Equal(rs.Data["log"], final.Data["log"]) {
			t.Fatalf("%s: sequential replay differs: %s vs %s", id, rs.FullHash, final.FullHash)
		}
	}
}
