package dbservice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"tolokaforge.io/operator/dbservice/client"
)

// An init and a DELETE of the same trial racing each other: the init answers 201 or the
// DELETE 404, never a 500, and under -race nothing reads a trial's fields unlocked after
// it was published (the init used to read t.current after store.add, when a DELETE
// could already have cleared it).
func TestInitRacingDelete(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, Options{})
	req := client.InitRequest{Tables: tablesOf(t, `{"a":[{"id":1}],"b":[{"id":2}]}`)}
	for i := range 300 {
		id := fmt.Sprintf("race-%d", i)
		var wg sync.WaitGroup
		var initErr, delErr error
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, initErr = c.Init(ctx, id, req)
		})
		wg.Go(func() {
			<-start
			// Spin until the trial is visible, so the DELETE lands right after publish.
			for range 1000 {
				if delErr = c.Delete(ctx, id); !errors.Is(delErr, client.ErrTrialNotFound) {
					return
				}
			}
		})
		close(start)
		wg.Wait()
		if initErr != nil {
			t.Fatalf("%s: init racing a delete: %v", id, initErr)
		}
		if delErr != nil && !errors.Is(delErr, client.ErrTrialNotFound) {
			t.Fatalf("%s: delete racing an init: %v", id, delErr)
		}
	}
}
