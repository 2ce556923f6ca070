package campaign

import (
	"fmt"
	"strings"

	evalv1 "tolokaforge.io/operator/api/v1alpha1"
)

// creationGate is how many missing Trials one reconcile creates and why
// the rest wait.
type creationGate struct {
	create int
	// rest are the missing Trials not created this time, held by the
	// budget or by maxParallel.
	rest                         int
	heldByBudget, heldByParallel int
	// reached: the spend reached the budget.
	reached bool
}

// gate bounds the creations by maxParallel (counting every non-terminal
// Trial) and by the budget.
func gate(c *evalv1.Campaign, cs census, spent evalv1.Spend, missing int) creationGate {
	slots := max(int(maxParallel(c))-cs.nonTerminal, 0)
	budget := c.Spec.Budget
	g := creationGate{reached: budgetReached(budget, spent)}
	allowance := missing
	if budget != nil {
		allowance = budgetAllowance(budget, spent, cs.nonTerminal, cs.finished, cs.finishedSpend, missing)
	}
	g.create = min(missing, slots, allowance)
	g.rest = missing - g.create
	if allowance < min(missing, slots) {
		g.heldByBudget = g.rest
	} else {
		g.heldByParallel = g.rest
	}
	return g
}

// suspended is spec.suspend.
func suspended(c *evalv1.Campaign) bool { return c.Spec.Suspend != nil && *c.Spec.Suspend }

func maxParallel(c *evalv1.Campaign) int32 {
	if c.Spec.MaxParallel < 1 {
		return 10 // the CRD default, for objects that bypassed defaulting
	}
	return c.Spec.MaxParallel
}

func budgetReached(b *evalv1.Budget, s evalv1.Spend) bool {
	if b == nil {
		return false
	}
	return (b.MaxUSD != nil && s.CostUSD >= *b.MaxUSD) || (b.MaxTokens != nil && s.Tokens >= *b.MaxTokens)
}

// budgetAllowance is how many of want Trials may be created now. A Trial is
// created while the spend so far plus the projected spend of the Trials
// already running (each at the mean of the finished ones) stays under the
// budget; with nothing running this is "spent < budget", so the budget stops
// creation exactly at the first Trial that starts after it was reached.
func budgetAllowance(b *evalv1.Budget, spent evalv1.Spend, running, finished int, finishedSpend evalv1.Spend, want int) int {
	var avgCost, avgTokens float64
	if finished > 0 {
		avgCost = finishedSpend.CostUSD / float64(finished)
		avgTokens = float64(finishedSpend.Tokens) / float64(finished)
	}
	n := 0
	for n < want {
		ahead := float64(running + n)
		if b.MaxUSD != nil && spent.CostUSD+ahead*avgCost >= *b.MaxUSD {
			break
		}
		if b.MaxTokens != nil && float64(spent.Tokens)+ahead*avgTokens >= float64(*b.MaxTokens) {
			break
		}
		n++
	}
	return n
}

func spendText(s evalv1.Spend, b *evalv1.Budget) string {
	var parts []string
	if b.MaxUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f of $%.4f", s.CostUSD, *b.MaxUSD))
	}
	if b.MaxTokens != nil {
		parts = append(parts, fmt.Sprintf("%d of %d tokens", s.Tokens, *b.MaxTokens))
	}
	return strings.Join(parts, ", ")
}
