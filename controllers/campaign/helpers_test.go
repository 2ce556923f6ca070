package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
	"tolokaforge.io/operator/controllers/campaign"
	"tolokaforge.io/operator/examples/shop"
	"tolokaforge.io/operator/test/envtest"
	"tolokaforge.io/operator/test/fakellm"
)

const (
	waitLong  = 4 * time.Minute
	pollEvery = 100 * time.Millisecond
	// failMarker in a Task's system prompt makes the scripted LLM buy the
	// wrong quantity, so that task fails.
	failMarker = "Variant: fail"
	// slowMarker makes every scripted LLM reply wait slowDelay, so a Trial
	// runs long enough to be seen running with spend.
	slowMarker = "Variant: slow"
	slowDelay  = 4 * time.Second
)

var bg = context.Background()

// buildShopTask is the shop Task labelled suite=shop, with a variant line
// appended to the system prompt (the scripted LLM reads it). The other
// fields stay raw JSON so their literals reach the API server as written.
func buildShopTask(ns, name, variant string) (*evalv1.Task, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(shop.TaskJSON(), &m); err != nil {
		return nil, err
	}
	var prompt string
	if err := json.Unmarshal(m["system_prompt"], &prompt); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(prompt + "\n\nVariant: " + variant)
	m["system_prompt"] = b
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return envtest.ShopTask(name, ns).Description(raw).Label("suite", "shop").Obj(), nil
}

func shopTask(ns, name, variant string) *evalv1.Task {
	t, err := buildShopTask(ns, name, variant)
	Expect(err).NotTo(HaveOccurred())
	return t
}

// newNamespace makes a namespace of its own for one spec.
func newNamespace() string {
	ns, err := s.namespace(bg)
	Expect(err).NotTo(HaveOccurred())
	return ns
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
	var delay time.Duration
	if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, slowMarker) {
		delay = slowDelay
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			return fakellm.Reply{Content: "Order O-001 is paid. ###STOP###", Usage: usage, Delay: delay}
		}
	}
	qty := 1
	if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, failMarker) {
		qty = 2
	}
	return fakellm.Reply{Usage: usage, Delay: delay, ToolCalls: []fakellm.ToolCall{
		{Name: "place_order", Arguments: fmt.Sprintf(`{"customer_id":"C-101","items":[{"product_id":"P-001","quantity":%d,"unit_price":89.99},{"product_id":"P-002","quantity":2,"unit_price":34.5}]}`, qty)},
		{Name: "confirm_payment", Arguments: `{"order_id":"O-001"}`},
	}}
}

// llmModel is the scripted LLM at $1 per million tokens either way.
func llmModel() evalv1.ModelSpec {
	return evalv1.ModelSpec{
		Provider: evalv1.ProviderOpenAI, Model: "scripted", BaseURL: s.llm.URL(),
		Pricing: &evalv1.Pricing{InputUSDPerMTok: 1, OutputUSDPerMTok: 1},
	}
}

// newCampaign is a Campaign of k trials per task, at most maxParallel at
// once, two attempts 100ms apart. Its user is scripted on purpose: the shop
// task asks for an LLM user, and a Trial that names none is refused.
func newCampaign(ns, name string, k, maxParallel int32, tasks ...string) *envtest.CampaignWrapper {
	w := envtest.MakeCampaign(name, ns).Tasks(tasks...).TrialsPerTask(k).MaxParallel(maxParallel).Retry(2, 100*time.Millisecond)
	w.Spec.UserSimulator = &evalv1.UserSimulatorSpec{Mode: evalv1.UserSimulatorScripted}
	return w
}

func create(objs ...client.Object) {
	GinkgoHelper()
	for _, o := range objs {
		Expect(s.Client.Create(bg, o)).To(Succeed(), "create %T %s", o, o.GetName())
	}
}

// eventually polls f until it returns nil or the timeout passes.
func eventually(timeout time.Duration, f func() error) {
	GinkgoHelper()
	Eventually(f, timeout, pollEvery).Should(Succeed())
}

func getCampaign(key types.NamespacedName) *evalv1.Campaign {
	GinkgoHelper()
	c := &evalv1.Campaign{}
	Expect(s.Client.Get(bg, key, c)).To(Succeed())
	return c
}

// completed waits for the Campaign's Completed condition and returns it.
func completed(key types.NamespacedName, reason string) *evalv1.Campaign {
	GinkgoHelper()
	var c *evalv1.Campaign
	eventually(waitLong, func() error {
		c = &evalv1.Campaign{}
		if err := s.Client.Get(bg, key, c); err != nil {
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

func trialsOf(ns, name string) []evalv1.Trial {
	GinkgoHelper()
	var list evalv1.TrialList
	Expect(s.Client.List(bg, &list, client.InNamespace(ns), client.MatchingLabels{evalv1.LabelCampaign: evalv1.LabelValue(name)})).To(Succeed())
	return list.Items
}

func near(what string, got *float64, want float64) {
	GinkgoHelper()
	Expect(got).NotTo(BeNil(), "%s absent, want %.6f", what, want)
	Expect(*got).To(BeNumerically("~", want, 1e-9), what)
}

func keyed(list []evalv1.KeyedAggregate, name string) evalv1.Aggregate {
	GinkgoHelper()
	for _, k := range list {
		if k.Name == name {
			return k.Aggregate
		}
	}
	Fail(fmt.Sprintf("no aggregate %q in %+v", name, list))
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

func watchParallel(ns string) *parallelWatcher {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(bg)
	w, err := s.Client.Watch(ctx, &evalv1.TrialList{}, client.InNamespace(ns))
	if err != nil {
		cancel()
	}
	Expect(err).NotTo(HaveOccurred())
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
func (p *parallelWatcher) stop() (int, int) {
	GinkgoHelper()
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	Expect(p.watchErr).NotTo(HaveOccurred())
	return p.max, len(p.created)
}
