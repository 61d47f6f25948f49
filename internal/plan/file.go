package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The files a plan is saved as, under the results directory.
const (
	MarkdownName = "plan.md"
	JSONName     = "plan.json"
)

// Sentinel errors of a plan file.
var (
	// ErrRead: the plan file cannot be read or is no plan of this schema.
	ErrRead = errors.New("read the plan")
	// ErrIncomplete: a scenario of the plan lacks an oracle or a budget;
	// running it would improvise what the plan should have decided.
	ErrIncomplete = errors.New("the plan is incomplete")
)

// maxPlan caps a plan file: far above any real one.
const maxPlan = 64 << 20

// Read loads a plan from path: plan.json, or a plan.md whose plan.json is
// beside it. Unknown fields are ignored; another schema is refused.
func Read(path string) (*Plan, error) {
	if strings.HasSuffix(path, ".md") {
		path = filepath.Join(filepath.Dir(path), JSONName)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRead, path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file", ErrRead, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPlan+1))
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRead, path, err)
	}
	if len(b) > maxPlan {
		return nil, fmt.Errorf("%w %s: over %d MiB", ErrRead, path, maxPlan>>20)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w %s: it is not a plan.json (%v); make one with go tool mage plan", ErrRead, path, err)
	}
	if p.Schema != Schema {
		return nil, fmt.Errorf("%w %s: schema %q, and this version of contested reads %q; make the plan again with go tool mage plan", ErrRead, path, p.Schema, Schema)
	}
	return &p, nil
}

// Check refuses a plan that cannot be run as it stands: a scenario
// without an oracle (no checker) or without its budgets (smoke,
// hardening, and release or its disclosure). It names each and says to go
// back to plan rather than improvise them.
func Check(p *Plan) error {
	var problems []string
	for _, s := range p.Scenarios {
		var lacks []string
		if strings.TrimSpace(s.Oracle.Checker) == "" {
			lacks = append(lacks, "oracle")
		}
		if strings.TrimSpace(s.Budget.Smoke) == "" || strings.TrimSpace(s.Budget.Hardening) == "" ||
			strings.TrimSpace(s.Budget.Release) == "" && strings.TrimSpace(s.Budget.ReleaseNotProvided) == "" {
			lacks = append(lacks, "budget (smoke, hardening and release, or the release's disclosure)")
		}
		if len(lacks) > 0 {
			problems = append(problems, fmt.Sprintf("scenario %s (%s) has no %s", s.ID, s.Name, strings.Join(lacks, " and no ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s; go back to go tool mage plan (and the registry's oracle and budget keys) instead of improvising them", ErrIncomplete, strings.Join(problems, "; "))
	}
	return nil
}

// Edited reports whether the plan changed since plan wrote it: its sum
// no longer matches its content.
func (p *Plan) Edited() bool { return Sum(p) != p.SHA256 }

// Authored is what Author did with one scenario's skeleton.
type Authored struct {
	Scenario string
	Target   string
	// Wrote is true when the file was written; otherwise Why says why not.
	Wrote bool
	Why   string
}

// Author writes each scenario's skeleton at its target path under root.
// It never overwrites a file (one that exists, or a link, is left alone
// and named), never writes outside root, and refuses a skeleton without
// the generated header. It commits nothing.
func Author(root string, p *Plan) ([]Authored, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open the module root: %w", err)
	}
	defer r.Close()
	var out []Authored
	for _, s := range p.Scenarios {
		a := Authored{Scenario: s.ID, Target: s.Target}
		switch {
		case s.Skeleton == "":
			a.Why = fmt.Sprintf("no skeleton: %s already runs it; run it deeper with %s", s.Existing, s.Run)
		case !strings.HasPrefix(s.Skeleton, Header):
			a.Why = "refused: the skeleton lacks the generated header"
		default:
			f, err := r.OpenFile(filepath.FromSlash(s.Target), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			switch {
			case errors.Is(err, fs.ErrExist):
				a.Why = "left alone: the file exists (never overwritten)"
			case err != nil:
				a.Why = "not written: " + err.Error()
			default:
				_, werr := io.WriteString(f, s.Skeleton)
				cerr := f.Close()
				if werr != nil || cerr != nil {
					a.Why = fmt.Sprintf("not written: %v", errors.Join(werr, cerr))
					_ = r.Remove(filepath.FromSlash(s.Target))
				} else {
					a.Wrote = true
				}
			}
		}
		out = append(out, a)
	}
	return out, nil
}
