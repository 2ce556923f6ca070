package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

func fmtRate(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *v)
}

func fmtCost(usd float64, costed bool) string {
	if !costed && usd == 0 {
		return "-"
	}
	return fmt.Sprintf("$%.4f", usd)
}

// WriteTable writes the terminal table: one line per task x agent, then one
// per agent (and all agents).
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s (k=%d; n counts measured trials: infra failures (INFRA) and invalid tasks are left out)\n\n", r.Title, r.K)
	// At k=1, pass@1, pass@k and pass^k are one number: it is printed once.
	hatK := fmt.Sprintf("\tPASS^%d", r.K)
	if r.K == 1 {
		hatK = ""
	}
	fmt.Fprintf(tw, "TASK\tAGENT\tTRIALS\tN\tINFRA\tPASSES\tPASS@1%s\tCOST\tTOP FAILURE REASONS\n", hatK)
	costed := map[string]bool{}
	for _, t := range r.Trials {
		if t.Costed {
			costed[t.Task+"\x00"+t.Agent] = true
			costed[t.Agent] = true
			costed[""] = true
		}
	}
	for _, row := range r.Rows() {
		var fs []string
		for _, f := range row.Failures {
			fs = append(fs, f.String())
		}
		reasons := strings.Join(fs, "; ")
		if reasons == "" {
			reasons = "-"
		}
		hat := "\t" + fmtRate(row.PassHat)
		if r.K == 1 {
			hat = ""
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s%s\t%s\t%s\n", row.Task, row.Agent, row.Trials, row.N, row.InfraFailed, row.C,
			fmtRate(row.PassAt1), hat, fmtCost(row.CostUSD, costed[row.Task+"\x00"+row.Agent]), reasons)
	}
	atK := fmt.Sprintf("\tPASS@%d", r.K)
	if r.K == 1 {
		atK = ""
	}
	fmt.Fprintf(tw, "\nAGENT\tN\tINFRA\tPASSES\tPASS@1%s%s\tMEAN SCORE\tTOKENS\tCOST\n", atK, hatK)
	for _, a := range r.AgentSummaries() {
		s := a.Summary
		key := a.Agent
		if key == "(all)" {
			key = ""
		}
		kCols := "\t" + fmtRate(s.PassAtK) + "\t" + fmtRate(s.PassHatK)
		if r.K == 1 {
			kCols = ""
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s%s\t%s\t%d\t%s\n", a.Agent, s.Trials, a.InfraFailed, s.Passes,
			fmtRate(s.PassAt1), kCols, fmtRate(s.MeanScore), s.Tokens, fmtCost(s.CostUSD, costed[key]))
	}
	if rates := r.ComponentRates(); len(rates) > 0 {
		fmt.Fprintf(tw, "\nAGENT\tCOMPONENT\tEVALUATED\tPASSED\tERRORED\tPASS RATE\tMEAN SCORE\n")
		for _, c := range rates {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", c.Agent, c.Component, c.Evaluated, c.Passed, c.Errored, fmtRate(c.PassRate), fmtRate(c.MeanScore))
		}
	}
	return tw.Flush()
}
