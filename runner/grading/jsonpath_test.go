package grading

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/theory/jsonpath"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
)

const jsonPathDoc = `{"db": {
  "orders": [
    {"id": "O-001", "status": "paid", "total": 158.99, "qty": 2, "tags": ["gift", "Express"], "amount": "158.990"},
    {"id": "O-002", "status": "Pending", "total": 20.0, "qty": 1, "tags": [], "amount": "20"}
  ],
  "customers": [{"id": "C-101", "balance": 141.01, "vip": true, "note": null}]
}}`

func TestJSONPathOperators(t *testing.T) {
	v, err := canonical.Parse([]byte(jsonPathDoc))
	if err != nil {
		t.Fatal(err)
	}
	root := canonical.ToAny(v)
	check := func(path string, set func(c *task.JSONPathCheck)) *task.JSONPathCheck {
		c := &task.JSONPathCheck{Path: path}
		set(c)
		return c
	}
	rawOp := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, c := range []struct {
		name    string
		check   *task.JSONPathCheck
		numeric []string
		pass    bool
		msg     string
	}{
		{"equals float", check("$.db.orders[0].total", func(c *task.JSONPathCheck) { c.Equals = rawOp("158.99") }), nil, true, ""},
		{"equals int against float literal", check("$.db.orders[0].qty", func(c *task.JSONPathCheck) { c.Equals = rawOp("2.0") }), nil, true, ""},
		{"equals float against int literal", check("$.db.orders[1].total", func(c *task.JSONPathCheck) { c.Equals = rawOp("20") }), nil, true, ""},
		{"equals fails with the node and value", check("$.db.orders[0].status", func(c *task.JSONPathCheck) { c.Equals = rawOp(`"pending"`) }), nil, false,
			`$['db']['orders'][0]['status'] is "paid", expected equals "pending"`},
		{"equals over several nodes: every node", check("$.db.orders[*].status", func(c *task.JSONPathCheck) { c.Equals = rawOp(`"paid"`) }), nil, false,
			`$['db']['orders'][1]['status'] is "Pending", expected equals "paid"`},
		{"equals a boolean is not 1", check("$.db.customers[0].vip", func(c *task.JSONPathCheck) { c.Equals = rawOp("1") }), nil, false,
			`$['db']['customers'][0]['vip'] is true, expected equals 1`},
		{"equals null", check("$.db.customers[0].note", func(c *task.JSONPathCheck) { c.Equals = rawOp("null") }), nil, true, ""},
		{"equals_ci", check("$.db.orders[1].status", func(c *task.JSONPathCheck) { c.EqualsCI = ptrTo("pending") }), nil, true, ""},
		{"equals_ci on a number", check("$.db.orders[1].qty", func(c *task.JSONPathCheck) { c.EqualsCI = ptrTo("1") }), nil, false,
			`$['db']['orders'][1]['qty'] is 1, expected equals_ci "1" (not a string)`},
		{"not_equals", check("$.db.orders[0].id", func(c *task.JSONPathCheck) { c.NotEquals = rawOp(`"O-002"`) }), nil, true, ""},
		{"not_equals fails", check("$.db.orders[0].total", func(c *task.JSONPathCheck) { c.NotEquals = rawOp("158.99") }), nil, false,
			`$['db']['orders'][0]['total'] is 158.99, expected not_equals 158.99`},
		{"contains substring", check("$.db.orders[0].id", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"-00"`) }), nil, true, ""},
		{"contains element", check("$.db.orders[0].tags", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"gift"`) }), nil, true, ""},
		{"contains is case-sensitive", check("$.db.orders[0].tags", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"express"`) }), nil, false,
			`$['db']['orders'][0]['tags'] is ["gift","Express"], expected contains "express"`},
		{"contains over several nodes: any node", check("$.db.orders[*].id", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"O-002"`) }), nil, true, ""},
		{"contains over several nodes, none", check("$.db.orders[*].id", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"O-003"`) }), nil, false,
			`none of the 2 selected nodes contains "O-003"`},
		{"contains a key of an object", check("$.db.customers[0]", func(c *task.JSONPathCheck) { c.Contains = rawOp(`"balance"`) }), nil, true, ""},
		{"contains_ci", check("$.db.orders[0].tags", func(c *task.JSONPathCheck) { c.ContainsCI = ptrTo("EXPRESS") }), nil, true, ""},
		{"matches", check("$.db.orders[*].id", func(c *task.JSONPathCheck) { c.Matches = ptrTo(`^O-\d{3}$`) }), nil, true, ""},
		{"matches a number fails", check("$.db.orders[0].qty", func(c *task.JSONPathCheck) { c.Matches = ptrTo(`2`) }), nil, false,
			`$['db']['orders'][0]['qty'] is 2, expected matches "2" (not a string)`},
		{"gt across int and float", check("$.db.orders[0].qty", func(c *task.JSONPathCheck) { c.GT = rawOp("1.5") }), nil, true, ""},
		{"gte equal", check("$.db.customers[0].balance", func(c *task.JSONPathCheck) { c.GTE = rawOp("141.01") }), nil, true, ""},
		{"lt fails", check("$.db.orders[*].total", func(c *task.JSONPathCheck) { c.LT = rawOp("100") }), nil, false,
			`$['db']['orders'][0]['total'] is 158.99, expected lt 100`},
		{"lte on strings", check("$.db.orders[0].id", func(c *task.JSONPathCheck) { c.LTE = rawOp(`"O-001"`) }), nil, true, ""},
		{"gt a string against a number", check("$.db.orders[0].id", func(c *task.JSONPathCheck) { c.GT = rawOp("1") }), nil, false,
			`$['db']['orders'][0]['id'] is "O-001", expected gt 1 (not comparable)`},
		{"exists", check("$.db.orders[?@.status == 'paid']", func(c *task.JSONPathCheck) { c.Exists = ptrTo(true) }), nil, true, ""},
		{"exists false", check("$.db.orders[?@.total > 1000]", func(c *task.JSONPathCheck) { c.Exists = ptrTo(false) }), nil, true, ""},
		{"exists fails", check("$.db.refunds", func(c *task.JSONPathCheck) { c.Exists = ptrTo(true) }), nil, false,
			`$.db.refunds selected nothing, expected a node`},
		{"absent", check("$.db.refunds", func(c *task.JSONPathCheck) { c.Absent = ptrTo(true) }), nil, true, ""},
		{"absent fails", check("$.db.orders[*]", func(c *task.JSONPathCheck) { c.Absent = ptrTo(true) }), nil, false,
			`$.db.orders[*] selected 2 nodes, expected none`},
		{"count", check("$.db.orders[?@.qty >= 1]", func(c *task.JSONPathCheck) { c.Count = ptrTo(2) }), nil, true, ""},
		{"count fails", check("$.db.orders[?@.total == 20]", func(c *task.JSONPathCheck) { c.Count = ptrTo(2) }), nil, false,
			`$.db.orders[?@.total == 20] selected 1 nodes, expected 2`},
		{"a path selecting nothing fails, never silently", check("$.db.orders[5].id", func(c *task.JSONPathCheck) { c.Equals = rawOp(`"x"`) }), nil, false,
			`$.db.orders[5].id selected nothing`},
		{"a path not rooted at db says so", check("$.orders[0].id", func(c *task.JSONPathCheck) { c.Equals = rawOp(`"O-001"`) }), nil, false,
			`$.orders[0].id selected nothing; the JSONPath root holds only db`},
		{"numeric_string_fields compares strings as numbers", check("$.db.orders[*].amount", func(c *task.JSONPathCheck) { c.GT = rawOp("10") }), []string{"amount"}, true, ""},
		{"numeric_string_fields equality across forms", check("$.db.orders[0].amount", func(c *task.JSONPathCheck) { c.Equals = rawOp("158.99") }), []string{"amount"}, true, ""},
		{"without numeric_string_fields a string is a string", check("$.db.orders[0].amount", func(c *task.JSONPathCheck) { c.Equals = rawOp("158.99") }), nil, false,
			`$['db']['orders'][0]['amount'] is "158.990", expected equals 158.99`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := jsonpath.Parse(c.check.Path)
			if err != nil {
				t.Fatal(err)
			}
			var re *regexp.Regexp
			if c.check.Matches != nil {
				re = regexp.MustCompile(*c.check.Matches)
			}
			numeric := map[string]bool{}
			for _, f := range c.numeric {
				numeric[f] = true
			}
			pass, msg := checkPath(c.check, p, root, re, numeric)
			if pass != c.pass || msg != c.msg {
				t.Errorf("checkPath = %v %q, want %v %q", pass, msg, c.pass, c.msg)
			}
		})
	}
}

func TestJSONPathGlobChecks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"out/receipt.txt": "Order O-001: PAID", "out/log.txt": "nothing", "notes.md": "hello"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		check task.JSONPathCheck
		dir   string
		pass  bool
		msg   string
	}{
		{"contains_ci in any matching file", task.JSONPathCheck{PathGlob: "out/*.txt", ContainsCI: ptrTo("paid")}, dir, true, ""},
		{"contains is case-sensitive", task.JSONPathCheck{PathGlob: "out/*.txt", Contains: json.RawMessage(`"paid"`)}, dir, false,
			`no file matching out/*.txt satisfies contains "paid"`},
		{"no file matches", task.JSONPathCheck{PathGlob: "*.pdf", ContainsCI: ptrTo("x")}, dir, false, "path_glob *.pdf matched no file"},
		{"exists", task.JSONPathCheck{PathGlob: "notes.md", Exists: ptrTo(true)}, dir, true, ""},
		{"count", task.JSONPathCheck{PathGlob: "out/*", Count: ptrTo(3)}, dir, false, "out/* selected 2 files, expected 3"},
		{"matches", task.JSONPathCheck{PathGlob: "out/receipt.txt", Matches: ptrTo(`O-\d+`)}, dir, true, ""},
		{"an escaping glob is refused", task.JSONPathCheck{PathGlob: "../*", ContainsCI: ptrTo("x")}, dir, false,
			`path_glob "../*" must be relative to the trial's directory, without ..`},
		{"an ordering operator does not apply", task.JSONPathCheck{PathGlob: "notes.md", GT: json.RawMessage(`1`)}, dir, false,
			"operator gt does not apply to file contents"},
		{"no work dir", task.JSONPathCheck{PathGlob: "notes.md", ContainsCI: ptrTo("x")}, "", false,
			"the trial has no file-tool directory to match path_glob against"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var re *regexp.Regexp
			if c.check.Matches != nil {
				re = regexp.MustCompile(*c.check.Matches)
			}
			pass, msg := checkGlob(&c.check, c.dir, re)
			if pass != c.pass || msg != c.msg {
				t.Errorf("checkGlob = %v %q, want %v %q", pass, msg, c.pass, c.msg)
			}
		})
	}
}

func TestPathGlobNeedsNoDatabase(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) {
		td.InitialState = nil
		td.Grading = &task.GradingConfig{Weights: map[string]float64{"state_checks": 1}, PassThreshold: ptrTo(1.0),
			StateChecks: &task.StateChecks{JSONPaths: []task.JSONPathCheck{{PathGlob: "answer.txt", ContainsCI: ptrTo("42"), Description: "the answer file"}}}}
	}))
	env.workDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(env.workDir, "answer.txt"), []byte("The answer is 42."), 0o644); err != nil {
		t.Fatal(err)
	}
	g := mustGrade(t, env, wire(t, user("q"), assistant("written")))
	if g.Score != 1 || g.Reasons != "JSONPath: all 1 checks passed" {
		t.Errorf("grade = %v", g)
	}
	if env.syncs != 0 {
		t.Errorf("a file check read the database (%d syncs)", env.syncs)
	}
}

func TestDBProbes(t *testing.T) {
	db := newTestDB(t)
	env := newTrial(t, db, loadShopTask(t, func(td *task.TaskDescription) {
		td.Grading.TranscriptRules = nil
		td.Grading.Weights = map[string]float64{"state_checks": 1}
		td.Grading.StateChecks = &task.StateChecks{DBProbes: []task.DBProbe{
			{ID: "one-paid", Query: "$.db.orders[?@.status == 'paid']", Expect: task.ProbeExpect{Count: ptrTo(1)}, Description: "exactly one paid order"},
			{ID: "statuses", Query: "$.db.orders[*].status", Expect: task.ProbeExpect{Equals: json.RawMessage(`["paid"]`)}},
			{ID: "total", Query: "$.db.orders[0].total", Expect: task.ProbeExpect{Equals: json.RawMessage(`[158.99]`)}},
			{ID: "no-cancelled", Query: "$.db.orders[?@.status == 'cancelled']", Expect: task.ProbeExpect{Absent: ptrTo(true)}},
			{ID: "big", Query: "$.db.orders[?@.total > 1000]", Expect: task.ProbeExpect{Exists: ptrTo(true)}},
			{ID: "two", Query: "$.db.products[?@.stock < 10]", Expect: task.ProbeExpect{Count: ptrTo(3)}},
		}}
	}))
	agentRun(t, env, goldenPlaceOrderArgs, "O-001", goldenFinal)
	before := hashes(t, db.client, env.id)
	g := mustGrade(t, env, nil)
	want := "DB probes: 4 of 6 probes passed; failed: big (expected a result, got none); two (expected count 3, got 2)"
	if g.Components.StateChecks != 4.0/6 || g.Reasons != want {
		t.Errorf("grade = %v\nwant reasons %s", g, want)
	}
	if len(env.replayed) != 0 {
		t.Errorf("probes replayed %v", env.replayed)
	}
	if after := hashes(t, db.client, env.id); after != before {
		t.Errorf("probes changed state")
	}
	if !strings.HasPrefix(g.Reasons, "DB probes: ") {
		t.Error("segment")
	}
	// A task without dict tables: every probe is the DB service's query.
	db.faults.mu.Lock()
	defer db.faults.mu.Unlock()
	queries := 0
	for _, r := range db.faults.seen {
		if r == "POST /trials/"+env.id+"/query" {
			queries++
		}
	}
	if queries != 6 {
		t.Errorf("%d probes went to the DB service, want 6: %v", queries, db.faults.seen)
	}
}
