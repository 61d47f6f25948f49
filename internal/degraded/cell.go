package degraded

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contested/contested/internal/atomicfile"
	"github.com/contested/contested/internal/registry"
)

// runner runs cells.
type runner struct {
	cfg     registry.Degraded
	front   *front
	browser *browser
	direct  *pgxpool.Pool
	t       *target
	dir     string
	results string
	keep    bool
	bound   time.Duration
	// baseline is what the cell's healthy page took before its fault: how
	// slowly this machine answers a page now, when nothing is wrong.
	baseline time.Duration
}

// run runs one cell: amount is its transfer's amount, distinct per cell.
func (r *runner) run(ctx context.Context, c Cell, amount int64) CellResult {
	cr := CellResult{Cell: c.ID(), Flow: c.Flow, Condition: c.Condition.Name, Leg: c.Condition.Lever}
	var problems []string
	tab, cancel, err := r.browser.tab(tabTimeout)
	if err != nil {
		cr.Problems = []string{err.Error()}
		return cr
	}
	defer cancel()
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	from, to := r.cfg.Accounts[0], r.cfg.Accounts[1]
	landed := false
	var key string
	var before int64

	// The precondition: a healthy page, waited for (a busy machine may
	// answer one slowly for a while); the fault is armed only once it holds,
	// and how long that page took is the cell's baseline for the browser's
	// share of the bound.
	v, tries := r.healthy(tab)
	cr.Views = append(cr.Views, v)
	if !v.healthy() {
		fail("the page was not healthy before the fault within %s (%d tries, the last %s, form key %q): the cell did not arm its fault", healthyWait, tries, v, v.FormKey)
		return r.finish(tab, cr, problems, false)
	}
	r.baseline, r.bound = v.Elapsed, cellBound(r.cfg.Timeout, v.Elapsed)
	if c.Flow != FlowLoad {
		key = v.FormKey
		if before, err = r.balance(ctx, from); err != nil {
			fail("database: read the balance of %s before: %v", from, err)
			return r.finish(tab, cr, problems, false)
		}
	}

	cr.ArmedAt = time.Now()
	a, err := r.t.arm(ctx, c.Condition)
	healed := false
	heal := func() {
		if a != nil && !healed {
			healed = true
			if herr := a.heal(context.WithoutCancel(ctx)); herr != nil {
				fail("heal %s: %v", c.Condition.Name, herr)
			}
		}
	}
	defer heal()
	if a != nil {
		cr.Injector = a.what
	}
	if err != nil {
		fail("arm %s: %v", c.Condition.Name, err)
		heal()
		return r.finish(tab, cr, problems, false)
	}

	var first View
	if c.Flow == FlowLoad {
		first = navigate(tab, r.front.url+"/")
	} else {
		first = submit(tab, from, to, amount)
	}
	cr.Views = append(cr.Views, first)
	landedAt := time.Now()
	heal()
	problems = append(problems, r.answered(first)...)
	switch c.Flow {
	case FlowLoad:
		landed = first.Status >= 500 || (first.Banner != "" && first.Banner != "ok")
		switch {
		case first.Err != "" || first.Status >= 500:
		case first.Banner == "":
			fail("no #banner on the page: the user is not told the backend failed")
		case !slices.Contains(c.Condition.Banners, first.Banner):
			fail("banner %q, want %s under %s", first.Banner, strings.Join(c.Condition.Banners, " or "), c.Condition.Name)
		}
		if first.Banner != "ok" && first.Rows > 0 {
			fail("%d balance rows shown while the backend failed: figures the page could not have read", first.Rows)
		}
	default:
		landed = first.Status >= 500 || (first.Outcome != "" && first.Outcome != "confirmed")
		problems = append(problems, r.outcome(first, key)...)
	}
	if !landed && first.Err == "" {
		fail("the fault did not reach the user (%s): the cell proves nothing", first)
	}

	final := first
	if c.Flow == FlowReload {
		time.Sleep(r.cfg.Timeout / 2)
		again := repost(tab, r.front.url, key, from, to, amount)
		cr.Views = append(cr.Views, again)
		problems = append(problems, r.answered(again)...)
		problems = append(problems, r.outcome(again, key)...)
		if again.Err == "" && again.Outcome != "confirmed" {
			fail("the reload after the backend came back answered %q, want confirmed: the user is left without a decision", again.Outcome)
		}
		final = again
	}
	if c.Flow != FlowLoad {
		pending := first.Outcome == "pending" || final.Outcome == "pending"
		db, dbProblems := r.exactlyOnce(ctx, key, from, before, amount, final.Outcome, pending)
		cr.Database = db
		problems = append(problems, dbProblems...)
	}
	fired := a.in && landed
	if landed {
		cr.LandedAt = landedAt
	}
	victim := first.String()
	if c.Flow == FlowReload {
		victim += "; reload: " + final.String()
	}
	cr.Victim = victim
	return r.finish(tab, cr, problems, fired)
}

// healthyWait bounds how long a cell waits for a healthy page before its
// fault: well inside tabTimeout, so the cell still has its time after it.
const healthyWait = 20 * time.Second

// healthy loads the front's page until it is healthy (healthyWait at
// most) and returns the last view and how many it took.
func (r *runner) healthy(tab context.Context) (View, int) {
	deadline := time.Now().Add(healthyWait)
	for tries := 1; ; tries++ {
		v := navigate(tab, r.front.url+"/")
		if v.healthy() || time.Now().After(deadline) || tab.Err() != nil {
			return v, tries
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// cellBound is a cell's bound on an answer: the front's promise (its
// timeout and a second) and what the browser takes beyond it, at least
// browserSlack and at least what a healthy page took just before the
// fault (baseline): a busy machine slows the browser and the front alike,
// but not the timeout the front promises to keep.
func cellBound(timeout, baseline time.Duration) time.Duration {
	return timeout + time.Second + max(browserSlack, baseline)
}

// finish records the verdict and keeps a screenshot of a failing cell (of
// every cell with Keep).
func (r *runner) finish(tab context.Context, cr CellResult, problems []string, fired bool) CellResult {
	cr.Problems, cr.Fired = problems, fired
	cr.Passed = len(problems) == 0 && fired
	if cr.Victim == "" && len(cr.Views) > 0 {
		cr.Victim = cr.Views[len(cr.Views)-1].String()
	}
	if !fired && len(problems) == 0 {
		cr.Problems = append(cr.Problems, "the fault did not fire")
	}
	if cr.Passed && !r.keep {
		return cr
	}
	png, err := screenshot(tab)
	if err != nil {
		cr.Problems = append(cr.Problems, "screenshot: "+err.Error())
		cr.Passed = false
		return cr
	}
	rel := DirName + "/cell-" + cr.Flow + "-" + cr.Condition + ".png"
	root, err := atomicfile.MakeRoot(r.results)
	if err == nil {
		err = root.Write(rel, png)
	}
	if err != nil {
		cr.Problems = append(cr.Problems, "save screenshot: "+err.Error())
		cr.Passed = false
		return cr
	}
	cr.Screenshot = rel
	return cr
}

// answered checks what holds for every answer: one came, not a 5xx page,
// within the bound. The one 5xx a front may answer is the 503 of a
// submission it refused as certainly not applied: a page whose #outcome
// says refused (outcome checks its key, and exactlyOnce that the database
// holds nothing of it). A 53300 at connect under pool exhaustion is such a
// refusal, as a connection dropped after the send is a pending 202.
func (r *runner) answered(v View) []string {
	var p []string
	switch {
	case v.Err != "":
		p = append(p, "no answer the user could read: "+v.Err)
	case v.Status == 0:
		p = append(p, "no HTTP response for the page")
	case v.Status == 503 && v.Outcome == "refused":
	case v.Status >= 500:
		p = append(p, fmt.Sprintf("HTTP %d: the user sees an error page (%.80s)", v.Status, v.Text))
	}
	if v.Elapsed > r.bound {
		p = append(p, fmt.Sprintf("answered in %s, above the bound %s (timeout %s + 1s + %s for the browser, what a healthy page took before the fault, at least %s)",
			v.Elapsed.Round(time.Millisecond), r.bound.Round(time.Millisecond), r.cfg.Timeout, (r.bound-r.cfg.Timeout-time.Second).Round(time.Millisecond), browserSlack))
	}
	return p
}

// outcome checks an answer to a submitted transfer: an outcome element for
// the form's key, with the status the outcome promises.
func (r *runner) outcome(v View, key string) []string {
	if v.Err != "" || v.Status >= 500 {
		return nil
	}
	var p []string
	want := map[string][]int64{"confirmed": {200}, "pending": {202}, "refused": {422, 503}}
	codes, ok := want[v.Outcome]
	switch {
	case v.Outcome == "":
		p = append(p, "no #outcome on the answer page: the user cannot tell what happened to the transfer")
	case !ok:
		p = append(p, fmt.Sprintf("outcome %q is none of confirmed, refused, pending", v.Outcome))
	case !slices.Contains(codes, v.Status):
		p = append(p, fmt.Sprintf("outcome %s answered HTTP %d, want %v", v.Outcome, v.Status, codes))
	}
	if v.Outcome != "" && v.Key != key {
		p = append(p, fmt.Sprintf("the answer is for key %q, the form sent %q", v.Key, key))
	}
	return p
}

// exactlyOnce checks the database after a submitted transfer: the form's
// key applied at most once, exactly once when the user was told confirmed,
// never when told refused, and the source moved by exactly that many
// amounts (more means money moved under another key).
//
// A front may settle a pending transfer in the background once the backend
// is back: when the user saw pending, the check waits up to settleWait for
// the key to be applied, then as long again as one backend call may take
// (the timeout, and what the cell's healthy page took, at least half a
// second), so that a stray apply under another key has landed before it
// reads.
func (r *runner) exactlyOnce(ctx context.Context, key, from string, before, amount int64, told string, pending bool) (string, []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleWait+time.Minute)
	defer cancel()
	var n int64
	deadline := time.Now().Add(settleWait)
	for {
		if err := r.direct.QueryRow(ctx, r.cfg.Applied, key).Scan(&n); err != nil {
			return "", []string{"database: count the applies of " + key + ": " + err.Error()}
		}
		if !pending || n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(r.cfg.Timeout + max(500*time.Millisecond, r.baseline))
	if err := r.direct.QueryRow(ctx, r.cfg.Applied, key).Scan(&n); err != nil {
		return "", []string{"database: count the applies of " + key + ": " + err.Error()}
	}
	after, err := r.balance(ctx, from)
	if err != nil {
		return "", []string{"database: read the balance of " + from + ": " + err.Error()}
	}
	moved := before - after
	db := fmt.Sprintf("key %s applied %d time(s); %s moved %d (amount %d); the user was told %q", key, n, from, moved, amount, told)
	var p []string
	if n > 1 {
		p = append(p, fmt.Sprintf("database: key %s applied %d times", key, n))
	}
	if moved != n*amount {
		p = append(p, fmt.Sprintf("database: %s moved %d but key %s was applied %d time(s) of %d: money moved under another key (a retry with a new idempotency key)", from, moved, key, n, amount))
	}
	switch told {
	case "confirmed":
		if n != 1 {
			p = append(p, fmt.Sprintf("database: confirmed to the user but applied %d times: a lost confirmation", n))
		}
	case "refused":
		if n != 0 {
			p = append(p, fmt.Sprintf("database: refused to the user but applied %d time(s)", n))
		}
	}
	return db, p
}

func (r *runner) balance(ctx context.Context, account string) (int64, error) {
	var b int64
	err := r.direct.QueryRow(ctx, r.cfg.Balance, account).Scan(&b)
	return b, err
}

// healthy reports whether the view is a healthy page: read, its banner ok,
// its transfer form there.
func (v View) healthy() bool { return v.Err == "" && v.Banner == "ok" && v.FormKey != "" }
