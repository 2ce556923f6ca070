package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/fakellm"
)

const (
	waitLong  = 4 * time.Minute
	pollEvery = 100 * time.Millisecond
	// failMarker in a Task's system prompt makes the scripted LLM buy the
	// wrong quantity, so that task fails.
	failMarker = "Variant: fail"
)

var bg = context.Background()

// shopTask is the shop Task with a variant line appended to the system
// prompt (the scripted LLM reads it).
func shopTask(t testing.TB, ns, name, variant string) *evalv1.Task {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(shop.TaskJSON(), &m); err != nil {
		t.Fatal(err)
	}
	var prompt string
	if err := json.Unmarshal(m["system_prompt"], &prompt); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(prompt + "\n\nVariant: " + variant)
	m["system_prompt"] = b
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &evalv1.Task{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"suite": "shop"}},
		Spec: evalv1.TaskSpec{
			Description:        apiextensionsv1.JSON{Raw: raw},
			InitialUserMessage: "Hi! I'm customer C-101. I'd like 1 Wireless Headphones and 2 USB-C Hubs, paid from my balance.",
		},
	}
}

// Every scripted LLM call bills 250,000 prompt tokens; at $1 per million
// that is exactly $0.25, and a trial makes two calls: $0.50, 500,000 tokens.
const (
	tokensPerCall  = 250_000
	usdPerTrial    = 0.5
	tokensPerTrial = 2 * tokensPerCall
)

// responder is the fake LLM: first turn, the golden calls (the wrong
// quantity under failMarker); after the tool results, a report and stop.
func responder(req fakellm.Request) fakellm.Reply {
	usage := fakellm.Usage{PromptTokens: tokensPerCall}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return fakellm.Reply{Content: "Order O-001 is paid. ###STOP###", Usage: usage}
		}
	}
	qty := 1
	if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, failMarker) {
		qty = 2
	}
	return fakellm.Reply{Usage: usage, ToolCalls: []fakellm.ToolCall{
		{Name: "place_order", Arguments: fmt.Sprintf(`{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":%d,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`, qty)},
		{Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`},
	}}
}

func oracleAgent(name string) evalv1.NamedAgent {
	return evalv1.NamedAgent{Name: name, Model: evalv1.ModelSpec{Provider: evalv1.ProviderOracle}}
}

func llmAgent(s *stack, name string) evalv1.NamedAgent {
	return evalv1.NamedAgent{Name: name, Model: evalv1.ModelSpec{
		Provider: evalv1.ProviderOpenAI, Model: "scripted", BaseURL: s.llm.URL(),
		Pricing: &evalv1.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 1},
	}}
}

func newCampaign(ns, name string, k, maxParallel int32, tasks []string, agents ...evalv1.NamedAgent) *evalv1.Campaign {
	return &evalv1.Campaign{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: evalv1.CampaignSpec{
			Tasks:         evalv1.CampaignTasks{Names: tasks},
			TrialsPerTask: k,
			Agents:        agents,
			MaxParallel:   maxParallel,
			RetryPolicy:   evalv1.RetryPolicy{MaxAttempts: 2, Backoff: &metav1.Duration{Duration: 100 * time.Millisecond}},
		},
	}
}

func create(t testing.TB, s *stack, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := s.client.Create(bg, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// eventually polls f until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s: %v", timeout, err)
		}
		time.Sleep(pollEvery)
	}
}

func getCampaign(t testing.TB, s *stack, key types.NamespacedName) *evalv1.Campaign {
	t.Helper()
	c := &evalv1.Campaign{}
	if err := s.client.Get(bg, key, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// completed waits for the Campaign's Completed condition and returns it.
func completed(t testing.TB, s *stack, key types.NamespacedName, reason string) *evalv1.Campaign {
	t.Helper()
	var c *evalv1.Campaign
	eventually(t, waitLong, func() error {
		c = &evalv1.Campaign{}
		if err := s.client.Get(bg, key, c); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, evalv1.CampaignCompleted)
		if cond == nil || cond.Status != metav1.ConditionTrue || c.Status.ObservedGeneration != c.Generation {
			return fmt.Errorf("not completed: %+v progress %s", cond, c.Status.Progress)
		}
		if cond.Reason != reason {
			return fmt.Errorf("completed with reason %s (%s), want %s", cond.Reason, cond.Message, reason)
		}
		return nil
	})
	return c
}

func trialsOf(t testing.TB, s *stack, ns, name string) []evalv1.Trial {
	t.Helper()
	var list evalv1.TrialList
	if err := s.client.List(bg, &list, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: evalv1.LabelValue(name)}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func near(t testing.TB, what string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s absent, want %.6f", what, want)
	}
	if math.Abs(*got-want) > 1e-9 {
		t.Fatalf("%s = %.12f, want %.12f", what, *got, want)
	}
}

func keyed(t testing.TB, list []evalv1.KeyedAggregate, name string) evalv1.Aggregate {
	t.Helper()
	for _, k := range list {
		if k.Name == name {
			return k.Aggregate
		}
	}
	t.Fatalf("no aggregate %q in %+v", name, list)
	return evalv1.Aggregate{}
}

// parallelWatcher follows a namespace's Trials through a watch and records
// the most that were non-terminal at once.
type parallelWatcher struct {
	mu       sync.Mutex
	live     map[string]bool // name -> non-terminal
	max      int
	created  map[types.UID]bool
	cancel   context.CancelFunc
	done     chan struct{}
	watchErr error
}

func watchParallel(t testing.TB, s *stack, ns string) *parallelWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(bg)
	w, err := s.client.Watch(ctx, &evalv1.TrialList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p := &parallelWatcher{live: map[string]bool{}, created: map[types.UID]bool{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					p.mu.Lock()
					if ctx.Err() == nil {
						p.watchErr = fmt.Errorf("the trial watch closed early")
					}
					p.mu.Unlock()
					return
				}
				tr, ok := ev.Object.(*evalv1.Trial)
				if !ok {
					continue
				}
				p.mu.Lock()
				p.created[tr.UID] = true
				switch ev.Type {
				case watch.Deleted:
					delete(p.live, tr.Name)
				case watch.Added, watch.Modified:
					p.live[tr.Name] = !campaign.IsTerminalPhase(campaign.PhaseOf(tr))
				}
				n := 0
				for _, l := range p.live {
					if l {
						n++
					}
				}
				p.max = max(p.max, n)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// stop ends the watch and returns the peak and the Trials ever seen.
func (p *parallelWatcher) stop(t testing.TB) (int, int) {
	t.Helper()
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watchErr != nil {
		t.Fatal(p.watchErr)
	}
	return p.max, len(p.created)
}
