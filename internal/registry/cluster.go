package registry

import (
	"fmt"
	"regexp"
	"strings"
)

// Cluster is the optional [cluster] table: the Go test that runs the
// module's service in the cluster rig, which `go tool mage cluster-tests`
// runs.
//
//	[cluster]
//	package = "./examples/ledger"   # the Go package of that test, as go test takes it
//	test = "TestClusterRig"         # a top-level test that runs the rig
type Cluster struct {
	Package string
	Test    string
	Line    int // the line of the [cluster] header in Registry.Path

	testAt pos
}

var clusterKeys = []string{"package", "test"}

// validTestName is a top-level Go test function's name.
var validTestName = regexp.MustCompile(`^Test([A-Z0-9_][A-Za-z0-9_]*)?$`)

// cluster reads the optional [cluster] table. Both keys are required: the
// target runs `go test -run '^<test>$' <package>` in the module root.
func (c *checker) cluster(root *value) *Cluster {
	t := c.table(root, "cluster", "[cluster]")
	if t == nil {
		return nil
	}
	c.knownKeys(t, clusterKeys, "[cluster]")
	cl := &Cluster{Line: t.at.line}
	pkg, pv := c.str(t, "package", "[cluster]")
	pkg = strings.TrimSpace(pkg)
	switch {
	case t.fields["package"] == nil:
		c.errorf(t.at, `[cluster] has no package; add package = "./path/to/pkg", the Go package (as go test takes it) whose test runs the cluster rig`)
	case pv == nil:
	case outsideModule(pkg, false) != "":
		c.errorf(pv.valueAt, "[cluster] package %q must be one Go package of this module as go test takes it, e.g. \"./examples/ledger\": it %s", pkg, outsideModule(pkg, false))
	default:
		cl.Package = pkg
	}
	test, tv := c.str(t, "test", "[cluster]")
	test = strings.TrimSpace(test)
	switch {
	case t.fields["test"] == nil:
		c.errorf(t.at, `[cluster] has no test; add test = "TestClusterRig", the Go test that runs the cluster rig (cluster.Run)`)
	case tv == nil:
	case !validTestName.MatchString(test):
		c.errorf(tv.valueAt, "[cluster] test %q is not a Go test name; name the top-level test that runs the cluster rig, e.g. \"TestClusterRig\" (no subtest path)", test)
	default:
		cl.Test, cl.testAt = test, tv.valueAt
	}
	return cl
}

// checkClusterTest is CheckTests' problem for a [cluster] test that is not
// in the inventory, nil when it is (or none is declared).
func (r *Registry) checkClusterTest(have map[string]bool) *Error {
	if r.Cluster == nil || r.Cluster.Test == "" || have[r.Cluster.Test] {
		return nil
	}
	at := r.Cluster.testAt
	if at.line == 0 {
		at.line = r.Cluster.Line
	}
	return &Error{File: r.Path, Line: at.line, Column: at.col, Kind: ErrMissingTest,
		Msg: fmt.Sprintf("[cluster] test %q is not in the test inventory; `go tool mage cluster-tests` runs it, so restore it or name the test that runs the cluster rig%s",
			r.Cluster.Test, suggest(r.Cluster.Test, keysOf(have)))}
}
