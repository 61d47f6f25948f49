package ci

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The GitLab CI schema, as far as these files use it, written out from
// GitLab's CI/CD YAML reference (no network reaches GitLab's own JSON
// schema here, and no Go module ships it): the global keywords, every job
// keyword (a key outside them is refused; those the files do not use are
// accepted with any value), and the shape and values of the keywords the
// files use: image, stage, script, variables, artifacts and their
// reports, cache, needs, when, timeout, parallel, tags. A job must run
// something (script, trigger, run, or extends a job that does); needs name
// jobs of the file; a stage is one of stages.

// glGlobal are the top-level keys that are not jobs.
var glGlobal = []string{"default", "include", "stages", "variables", "workflow", "image", "services", "cache", "before_script", "after_script", "spec"}

// glJobKeys are the job keywords.
var glJobKeys = []string{"after_script", "allow_failure", "artifacts", "before_script", "cache", "coverage", "dast_configuration",
	"dependencies", "environment", "extends", "hooks", "identity", "id_tokens", "image", "inherit", "interruptible",
	"manual_confirmation", "needs", "pages", "parallel", "release", "resource_group", "retry", "rules", "run", "script",
	"secrets", "services", "stage", "tags", "timeout", "trigger", "variables", "when"}

var (
	glJobWhen      = []string{"on_success", "on_failure", "never", "always", "manual", "delayed"}
	glArtifactWhen = []string{"on_success", "on_failure", "always"}
	glCachePolicy  = []string{"pull", "push", "pull-push"}
	glArtifactKeys = []string{"paths", "exclude", "expire_in", "expose_as", "name", "public", "access", "reports", "untracked", "when"}
	glReportKeys   = []string{"accessibility", "annotations", "api_fuzzing", "browser_performance", "coverage_report", "codequality",
		"container_scanning", "coverage_fuzzing", "cyclonedx", "dast", "dependency_scanning", "dotenv", "junit", "license_scanning",
		"load_performance", "metrics", "requirements", "repository_xray", "sast", "secret_detection", "terraform"}
	glCacheKeys  = []string{"key", "paths", "untracked", "unprotect", "when", "policy", "fallback_keys"}
	glImageKeys  = []string{"name", "entrypoint", "docker", "pull_policy", "kubernetes"}
	glNeedKeys   = []string{"job", "artifacts", "optional", "pipeline", "project", "ref", "parallel"}
	glDefaultSt  = []string{".pre", "build", "test", "deploy", ".post"}
	glVarName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	glDuration   = regexp.MustCompile(`^\s*\d+\s*(s|sec|seconds?|m|min|minutes?|h|hr|hours?|d|days?)(\s*\d+\s*(s|sec|seconds?|m|min|minutes?|h|hr|hours?|d|days?))*\s*$`)
	glUsesVar    = regexp.MustCompile(`^\$\{?\w+\}?$`)
	glParallelUp = 200
)

// gitlabProblems checks a GitLab CI file against the schema above and
// returns its problems, each with the file's name and the line.
func gitlabProblems(name string, src []byte) []string {
	c := &glCheck{name: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return []string{fmt.Sprintf("%s: not YAML: %v", name, err)}
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return []string{name + ": the file is not a mapping of keywords and jobs"}
	}
	top := doc.Content[0]
	stages := glDefaultSt
	jobs := map[string]*yaml.Node{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch {
		case k.Value == "stages":
			stages = c.strings(v, "stages")
		case k.Value == "variables":
			c.variables(v)
		case k.Value == "image":
			c.image(v)
		case k.Value == "default", k.Value == "include", k.Value == "workflow", k.Value == "services", k.Value == "spec":
		case k.Value == "cache":
			c.cache(v)
		case k.Value == "before_script", k.Value == "after_script":
			c.script(v, k.Value)
		default:
			if _, dup := jobs[k.Value]; dup {
				c.add(k, "job %s is defined twice", k.Value)
			}
			jobs[k.Value] = v
		}
	}
	for _, name := range sortedKeys(jobs) {
		c.job(name, jobs[name], jobs, stages)
	}
	return c.problems
}

type glCheck struct {
	name     string
	problems []string
}

func (c *glCheck) add(n *yaml.Node, format string, a ...any) {
	c.problems = append(c.problems, fmt.Sprintf("%s:%d: %s", c.name, n.Line, fmt.Sprintf(format, a...)))
}

// keys walks a mapping, refusing a key outside allowed, and returns the
// values by key.
func (c *glCheck) keys(n *yaml.Node, what string, allowed []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		c.add(n, "%s must be a mapping", what)
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			c.add(k, "%s has no keyword %q (GitLab accepts %s)", what, k.Value, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = n.Content[i+1]
	}
	return out
}

func (c *glCheck) scalar(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode {
		c.add(n, "%s must be a single value", what)
		return ""
	}
	return n.Value
}

func (c *glCheck) oneOf(n *yaml.Node, what string, values []string) {
	if v := c.scalar(n, what); v != "" && !slices.Contains(values, v) && !glUsesVar.MatchString(v) {
		c.add(n, "%s is %q; GitLab accepts %s", what, v, strings.Join(values, ", "))
	}
}

// strings is a string or a list of strings.
func (c *glCheck) strings(n *yaml.Node, what string) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var out []string
		for _, e := range n.Content {
			out = append(out, c.scalar(e, what+" entry"))
		}
		return out
	}
	c.add(n, "%s must be a string or a list of strings", what)
	return nil
}

// script is a command or a list of commands (nested one level, as
// GitLab flattens anchors).
func (c *glCheck) script(n *yaml.Node, what string) {
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			c.add(n, "%s is empty", what)
		}
		for _, e := range n.Content {
			if e.Kind == yaml.SequenceNode {
				c.strings(e, what)
				continue
			}
			c.scalar(e, what+" command")
		}
		return
	}
	c.scalar(n, what)
}

func (c *glCheck) variables(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		c.add(n, "variables must be a mapping")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !glVarName.MatchString(k.Value) {
			c.add(k, "variable name %q is not a valid name", k.Value)
		}
		if v.Kind == yaml.MappingNode {
			c.keys(v, "variable "+k.Value, []string{"value", "description", "options", "expand"})
			continue
		}
		c.scalar(v, "variable "+k.Value)
	}
}

func (c *glCheck) image(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		if _, ok := c.keys(n, "image", glImageKeys)["name"]; !ok {
			c.add(n, "image needs a name")
		}
		return
	}
	if c.scalar(n, "image") == "" {
		c.add(n, "image is empty")
	}
}

func (c *glCheck) cache(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) > 4 {
			c.add(n, "a job has at most 4 caches")
		}
		for _, e := range n.Content {
			c.cache(e)
		}
		return
	}
	m := c.keys(n, "cache", glCacheKeys)
	c.pathsAndWhen(m, "cache")
	if p, ok := m["policy"]; ok {
		c.oneOf(p, "cache policy", glCachePolicy)
	}
	if k, ok := m["key"]; ok && k.Kind == yaml.MappingNode {
		c.keys(k, "cache key", []string{"files", "prefix"})
	}
}

// pathsAndWhen checks the paths and when that a cache and artifacts
// share: a list of paths, and on_success, on_failure or always.
func (c *glCheck) pathsAndWhen(m map[string]*yaml.Node, what string) {
	if p, ok := m["paths"]; ok {
		c.strings(p, what+" paths")
	}
	if w, ok := m["when"]; ok {
		c.oneOf(w, what+" when", glArtifactWhen)
	}
}

func (c *glCheck) artifacts(n *yaml.Node) {
	m := c.keys(n, "artifacts", glArtifactKeys)
	c.pathsAndWhen(m, "artifacts")
	if r, ok := m["reports"]; ok {
		if j, ok := c.keys(r, "artifacts reports", glReportKeys)["junit"]; ok {
			c.strings(j, "junit report")
		}
	}
}

func (c *glCheck) job(name string, n *yaml.Node, jobs map[string]*yaml.Node, stages []string) {
	what := "job " + name
	m := c.keys(n, what, glJobKeys)
	hidden := strings.HasPrefix(name, ".")
	_, script := m["script"]
	_, trigger := m["trigger"]
	_, run := m["run"]
	_, extends := m["extends"]
	if !hidden && !script && !trigger && !run && !extends {
		c.add(n, "%s runs nothing: it needs script (or trigger, run, or extends)", what)
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "script", "before_script", "after_script":
			c.script(v, what+" "+k)
		case "image":
			c.image(v)
		case "stage":
			if s := c.scalar(v, what+" stage"); !slices.Contains(stages, s) {
				c.add(v, "%s's stage %q is not one of the stages (%s)", what, s, strings.Join(stages, ", "))
			}
		case "variables":
			c.variables(v)
		case "artifacts":
			c.artifacts(v)
		case "cache":
			c.cache(v)
		case "when":
			c.oneOf(v, what+" when", glJobWhen)
		case "timeout":
			if t := c.scalar(v, what+" timeout"); !glDuration.MatchString(t) {
				c.add(v, "%s's timeout %q is not a duration (1h, 30m, 1h 30m)", what, t)
			}
		case "tags":
			c.strings(v, what+" tags")
		case "parallel":
			c.parallel(v, what)
		case "needs":
			c.needs(v, what, jobs)
		}
	}
}

func (c *glCheck) parallel(n *yaml.Node, what string) {
	if n.Kind == yaml.MappingNode {
		if mx, ok := c.keys(n, what+" parallel", []string{"matrix"})["matrix"]; ok && mx.Kind != yaml.SequenceNode {
			c.add(mx, "%s's parallel matrix must be a list", what)
		}
		return
	}
	v, err := strconv.Atoi(c.scalar(n, what+" parallel"))
	if err != nil || v < 1 || v > glParallelUp {
		c.add(n, "%s's parallel must be a number from 1 to %d, or a matrix", what, glParallelUp)
	}
}

func (c *glCheck) needs(n *yaml.Node, what string, jobs map[string]*yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		c.add(n, "%s's needs must be a list", what)
		return
	}
	for _, e := range n.Content {
		job, local := e.Value, true
		if e.Kind == yaml.MappingNode {
			m := c.keys(e, what+" need", glNeedKeys)
			j, ok := m["job"]
			if !ok {
				c.add(e, "%s's need names no job", what)
				continue
			}
			job = j.Value
			_, project := m["project"]
			_, pipeline := m["pipeline"]
			opt, optional := m["optional"]
			local = !project && !pipeline && !(optional && opt.Value == "true")
		}
		if _, ok := jobs[job]; local && !ok {
			c.add(e, "%s needs %q, which this file does not define", what, job)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
