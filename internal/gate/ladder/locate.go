package ladder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/contested/contested/internal/faultdir"
	"github.com/contested/contested/internal/gate/contract"
	"github.com/contested/contested/internal/gotest"
	"github.com/contested/contested/internal/registry"
)

// Locate is the ladder's first step: it maps a test id to the surface that
// lists it. A test the module does not have is ErrUnknownTest; a test no
// surface lists is ErrNotContractTest.
func Locate(ctx context.Context, testID string, opts Options) (registry.Surface, error) {
	pkg, name := SplitID(testID)
	top, _, _ := strings.Cut(name, "/")
	listPkg := pkg
	if listPkg == "" {
		listPkg = "./..."
	}
	names, err := gotest.List(ctx, opts.Env.ModuleRoot, listPkg)
	switch {
	case errors.Is(err, gotest.ErrPattern):
		return registry.Surface{}, fmt.Errorf("%w: %s is not a package of the module (%v); give a test name as the battery reports it", ErrUnknownTest, listPkg, err)
	case err != nil && !errors.Is(err, gotest.ErrUnparsed):
		return registry.Surface{}, fmt.Errorf("%w: list the tests of %s: %w", ErrCannotList, listPkg, err)
	case !slices.Contains(names, top) && err != nil:
		return registry.Surface{}, fmt.Errorf("%w: %s is not declared in a test file of %s that parses, and some do not, so it may be in one of them: fix the syntax error and arbitrate again: %v", ErrUnknownTest, top, listPkg, err)
	case !slices.Contains(names, top):
		return registry.Surface{}, fmt.Errorf("%w: %s is not a test of %s (no _test.go file there declares it); give a test name as the battery reports it", ErrUnknownTest, top, listPkg)
	}
	module, _ := contract.ModulePath(opts.Env.ModuleRoot)
	s, ok := contract.SurfaceOf(opts.Registry, module, pkg, name)
	if !ok {
		return registry.Surface{}, fmt.Errorf("%w: %s: no surface in %s lists it", ErrNotContractTest, name, opts.Env.Registry)
	}
	return s, nil
}

// SplitID splits a test id into its package (possibly empty) and the test
// path: "example.com/m/store.TestX/sub" gives ("example.com/m/store",
// "TestX/sub").
func SplitID(id string) (pkg, name string) {
	id = strings.TrimSpace(id)
	if isTestName(id) {
		return "", id
	}
	for i := 0; i < len(id); i++ {
		if id[i] == '.' && isTestName(id[i+1:]) && !strings.Contains(id[:i], " ") {
			return id[:i], id[i+1:]
		}
	}
	return "", id
}

func isTestName(s string) bool {
	for _, p := range []string{"Test", "Example", "Fuzz", "Benchmark"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// FileName is the artifact name of a test's ladder outcome (without
// extension), under the results directory's ladder/: at most 120 bytes,
// and two tests never share one (TestA/b and TestA_b differ; see
// faultrecord.SafeFileName).
func FileName(test string) string { return faultdir.SafeFileName(test) }
