package command

import (
	"errors"
	"os"

	"github.com/contested/contested/internal/runenv"
)

// canonicalHere is the registry's [guard] canonical_databases of the
// module the working directory is in, for the commands that run outside a
// workspace (fault-preflight, layer): the databases no fault layer may be.
// Outside a module, or in one without a registry, there are none; a
// registry that does not load is bad input (exit 2), since what it guards
// cannot be known.
func canonicalHere() ([]string, error) {
	mod, err := workingModule()
	if err != nil {
		return nil, nil
	}
	path := runenv.RegistryPath(mod)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	reg, err := loadRegistry(path)
	if err != nil {
		return nil, err
	}
	return reg.Guard.CanonicalDatabases, nil
}
