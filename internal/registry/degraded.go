package registry

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Degraded is the optional [degraded] table: the web front `go tool mage
// degraded` recreates behind standing Toxiproxy pass-throughs and walks in
// a headless Chromium. Every key is optional; an absent one takes the
// default shown, which is this repository's ledger front. Placeholders in
// setup and run: {dsn} (the front's database: direct for setup, through the
// stage's proxy for run) and {timeout} (Timeout, as Go writes a duration).
// DSNEnv, when set, hands the same DSN to both commands in that environment
// variable instead, so that its password is on no command line.
//
//	[degraded]
//	build = "./examples/ledger/cmd/ledger"   # the Go package of the front's command (go build)
//	dsn_env = "LEDGER_DSN"                    # the variable that hands the front its DSN
//	setup = ["migrate", "-accounts", "2", "-balance", "1000000"]
//	run = ["web", "-listen", "127.0.0.1:0", "-timeout", "{timeout}", "-pool", "4"]
//	timeout = "1s"                            # the front's bound on each backend call
//	applied = "SELECT count(*) FROM postings WHERE transfer_id = $1"
//	balance = "SELECT balance FROM accounts WHERE id = $1"
//	accounts = ["acct-00", "acct-01"]         # the transfer's source and destination
//
// The front prints "... listening on http://HOST:PORT" on stdout once it
// serves, and follows the page contract docs/how-to/contract-http-front.md
// gives (banner, outcome, transfer form).
type Degraded struct {
	Build    string
	DSNEnv   string
	Setup    []string
	Run      []string
	Timeout  time.Duration
	Applied  string
	Balance  string
	Accounts [2]string
	Line     int // the line of the [degraded] header, 0 when the defaults apply
}

// DefaultDegraded is the [degraded] table of this repository's ledger front.
func DefaultDegraded() Degraded {
	return Degraded{
		Build:    "./examples/ledger/cmd/ledger",
		DSNEnv:   "LEDGER_DSN",
		Setup:    []string{"migrate", "-accounts", "2", "-balance", "1000000"},
		Run:      []string{"web", "-listen", "127.0.0.1:0", "-timeout", "{timeout}", "-pool", "4"},
		Timeout:  time.Second,
		Applied:  "SELECT count(*) FROM postings WHERE transfer_id = $1",
		Balance:  "SELECT balance FROM accounts WHERE id = $1",
		Accounts: [2]string{"acct-00", "acct-01"},
	}
}

var degradedKeys = []string{"build", "dsn_env", "setup", "run", "timeout", "applied", "balance", "accounts"}

// Bounds of [degraded] timeout: the stage's latency is twice it, and each
// cell waits a few of it, so a long one makes the matrix crawl.
const (
	minDegradedTimeout = 100 * time.Millisecond
	maxDegradedTimeout = 10 * time.Second
)

// degraded reads the optional [degraded] table over the defaults.
func (c *checker) degraded(root *value) Degraded {
	d := DefaultDegraded()
	t := c.table(root, "degraded", "[degraded]")
	if t == nil {
		return d
	}
	const where = "[degraded]"
	c.knownKeys(t, degradedKeys, where)
	d.Line = t.at.line
	if s, v := c.str(t, "build", where); v != nil {
		s = strings.TrimSpace(s)
		if why := outsideModule(s, false); why != "" {
			c.errorf(v.valueAt, "%s build %q must be one Go package of this module as go build takes it, e.g. \"./examples/ledger/cmd/ledger\": it %s", where, s, why)
		} else {
			d.Build = s
		}
	}
	if s, v := c.str(t, "dsn_env", where); v != nil {
		switch s = strings.TrimSpace(s); {
		case s == "":
			d.DSNEnv = "" // the front takes {dsn} on its command line
		case !envName.MatchString(s):
			c.errorf(v.valueAt, "%s dsn_env %q is not an environment variable's name (letters, digits, _)", where, s)
		default:
			d.DSNEnv = s
		}
	}
	if args, ok := c.args(t, "setup", where); ok {
		d.Setup = args
	}
	if args, ok := c.args(t, "run", where); ok {
		d.Run = args
	}
	if d.DSNEnv == "" && !containsArg(d.Run, "{dsn}") {
		c.errorf(t.at, "%s run must pass {dsn} to the front, or dsn_env must name the variable that does: the stage routes the front's database through its proxy, and a front that reaches Postgres another way is never degraded", where)
	}
	if s, v := c.str(t, "timeout", where); v != nil {
		dur, err := time.ParseDuration(strings.TrimSpace(s))
		switch {
		case err != nil:
			c.errorf(v.valueAt, "%s timeout %q is not a duration; write e.g. \"1s\"", where, s)
		case dur < minDegradedTimeout || dur > maxDegradedTimeout:
			c.errorf(v.valueAt, "%s timeout %s is outside %s..%s", where, dur, minDegradedTimeout, maxDegradedTimeout)
		default:
			d.Timeout = dur
		}
	}
	for _, q := range []struct {
		key string
		dst *string
	}{{"applied", &d.Applied}, {"balance", &d.Balance}} {
		s, v := c.str(t, q.key, where)
		if v == nil {
			continue
		}
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(strings.ToUpper(s), "SELECT ") || !strings.Contains(s, "$1") || strings.Contains(s, ";") {
			c.errorf(v.valueAt, "%s %s must be one SELECT of a single number that takes $1 (%s), without ';'", where, q.key, degradedQueryMeaning[q.key])
			continue
		}
		*q.dst = s
	}
	if names, at := c.names(t, "accounts", where+" accounts", "account"); t.fields["accounts"] != nil && len(at) == len(names) {
		if len(names) != 2 {
			c.errorf(t.fields["accounts"].valueAt, "%s accounts must name exactly two distinct accounts: the transfer's source and destination", where)
		} else {
			d.Accounts = [2]string{names[0], names[1]}
		}
	}
	return d
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var degradedQueryMeaning = map[string]string{
	"applied": "how many times the transfer with id $1 was applied",
	"balance": "the balance of account $1",
}

// args reads an array of strings that may repeat (a command line); ok is
// false when the key is absent or does not hold one (reported).
func (c *checker) args(t *value, key, where string) ([]string, bool) {
	v := t.fields[key]
	if v == nil {
		return nil, false
	}
	if v.kind != unstable.Array {
		c.errorf(v.valueAt, "%s %s must be an array of strings (the front's arguments), not %s", where, key, v.describe())
		return nil, false
	}
	out := make([]string, 0, len(v.items))
	ok := true
	for _, item := range v.items {
		if item.kind != unstable.String || item.text == "" {
			c.errorf(item.valueAt, "%s %s must hold only non-empty strings; this element is %s", where, key, item.describe())
			ok = false
			continue
		}
		out = append(out, item.text)
	}
	if ok && key == "run" && len(out) == 0 {
		c.errorf(v.valueAt, "%s run is empty; give the front's arguments, e.g. [\"web\", \"-dsn\", \"{dsn}\"]", where)
		ok = false
	}
	return out, ok
}

func containsArg(args []string, s string) bool {
	for _, a := range args {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

// Expand returns args with {dsn} and {timeout} replaced.
func (d Degraded) Expand(args []string, dsn string) []string {
	out := make([]string, len(args))
	r := strings.NewReplacer("{dsn}", dsn, "{timeout}", d.Timeout.String())
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// String names the table for messages.
func (d Degraded) String() string {
	if d.Line == 0 {
		return "[degraded] (defaults)"
	}
	return fmt.Sprintf("[degraded] at line %d", d.Line)
}
