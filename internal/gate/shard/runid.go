package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/contested/contested/internal/envvar"
	"github.com/contested/contested/internal/runid"
)

// Lookup reads one environment variable (os.LookupEnv).
type Lookup func(name string) (string, bool)

// SharedRunID is the run id every shard of one battery shares, and where it
// came from, in this order: CONTESTED_RUN_ID when set; GitHub Actions'
// GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT ("gh-<id>-<attempt>"); GitLab's
// CI_PIPELINE_ID ("gl-<id>"); else, for shards run by hand, "local-" and a
// digest of the module path and its commit (head, when known): every shard
// of one module at one commit shares it, wherever it is checked out. A
// value that cannot be a run id is an error that says what to set.
func SharedRunID(env Lookup, module, head string) (id, from string, err error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	switch {
	case get(envvar.RunID) != "":
		id, from = get(envvar.RunID), envvar.RunID
	case get("GITHUB_RUN_ID") != "":
		id, from = "gh-"+get("GITHUB_RUN_ID")+"-"+cmpOr(get("GITHUB_RUN_ATTEMPT"), "1"), "GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT"
	case get("CI_PIPELINE_ID") != "":
		id, from = "gl-"+get("CI_PIPELINE_ID"), "CI_PIPELINE_ID"
	default:
		s := sha256.Sum256([]byte(module + "\n" + head))
		id, from = "local-"+hex.EncodeToString(s[:6]), "the module path and its commit (local shards)"
	}
	if err := runid.Check(id + "-" + Spec{Index: MaxTotal, Total: MaxTotal}.Tag()); err != nil {
		return "", "", fmt.Errorf("%w: the shared run id %q (from %s) cannot carry a shard's tag: %v; set %s to at most %d characters, the same for every shard", ErrBadSpec, id, from, err, envvar.RunID, runid.MaxLen-len("-s256of256"))
	}
	return id, from, nil
}

// RunID is shard s's own run id under the shared one.
func RunID(shared string, s Spec) string { return shared + "-" + s.Tag() }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
